// State machines (package statemachine, nFlow's model): their definitions,
// the counts of their instances per state, and the instances
// (server/statemachine.go).
import { identity, path, request } from './client'
import type { ListResponse } from './types'

/** What a state is (nFlow's kinds). */
export type SmKind = 'start' | 'normal' | 'wait' | 'manual' | 'end' | 'error'

/** A state of a definition. */
export interface SmState {
  name: string
  kind: SmKind
  description?: string
  /** Where the state's exhausted failures go (default the definition's error state). */
  failure?: string
  retries?: number
  /** Nanoseconds. */
  backoff?: number
  max_backoff?: number
  timeout?: number
}

/** A definition's latest stored version. */
export interface SmDefinition {
  type: string
  description?: string
  states: SmState[] | null
  /** The permitted moves: from a state to the states it may move to. */
  transitions: Record<string, string[]> | null
  error_state?: string
  retries: number
  version: number
  sha1: string
  modified: string
  /** Why a stored body is not a definition. */
  error?: string
}

/** An instance's status (nFlow's). */
export type SmStatus = 'created' | 'inProgress' | 'executing' | 'manual' | 'finished'

/** The statuses, as the filters offer them: lists do not tell executing apart (an instance whose method runs is listed as inProgress; the server refuses the filter). */
export const smStatuses: SmStatus[] = ['created', 'inProgress', 'manual', 'finished']

/** How many instances are in a state with a status. */
export interface SmStateCount {
  state: string
  status: SmStatus
  count: number
  /** Of those created or in progress, how many are queued: their next activation has come. */
  queued: number
}

/** An action: a state execution or a change from outside. */
export interface SmAction {
  id: number
  type: 'stateExecution' | 'stateExecutionFailed' | 'externalChange' | 'recovery'
  state: string
  text?: string
  retry_no: number
  execution_start: string
  execution_end: string
  executor?: string
  /** The variables the action set, with their values after it. */
  updated?: Record<string, string>
}

/** An instance with its actions and variables. */
export interface SmInstance {
  id: string
  type: string
  version: number
  status: SmStatus
  state: string
  state_text?: string
  next_activation?: string
  retries: number
  business_key?: string
  external_id?: string
  parent?: string
  parent_action?: number
  root?: string
  signal?: number
  /** The task queue of the workers that run it, and its tasks' priority there (1 highest to 5; absent: normal). */
  executor_group?: string
  priority?: number
  vars?: Record<string, string>
  created_vars?: Record<string, string>
  created: string
  modified: string
  children?: string[]
  actions: SmAction[] | null
}

/** What a new instance starts with. */
export interface SmCreateRequest {
  type: string
  state?: string
  vars?: Record<string, string>
  business_key?: string
  external_id?: string
  /** RFC 3339. */
  activation?: string
  executor_group?: string
}

/** A change from outside: each field optional. */
export interface SmUpdateRequest {
  state?: string
  /** RFC 3339. */
  activation?: string
  vars?: Record<string, string>
  reason?: string
}

/** The filters of the instances list. */
export interface SmFilter {
  type?: string
  state?: string
  status?: string
  business_key?: string
  external_id?: string
  parent?: string
}

/** The attributes of an instance's run that lists show. */
export const smAttr = { type: 'strand.sm.type', state: 'strand.sm.state', status: 'strand.sm.status' } as const

/** GET /statemachines: every definition's latest version. */
export function listStateMachines(signal?: AbortSignal): Promise<{ definitions: SmDefinition[] }> {
  return request('GET', '/statemachines', { signal })
}

/** GET /statemachines/{type}: one definition's latest version (a list of one). */
export function getStateMachine(type: string, signal?: AbortSignal): Promise<{ definitions: SmDefinition[] }> {
  return request('GET', path`/statemachines/${type}`, { signal })
}

/** GET /statemachines/{type}/versions/{version}: one version of a definition (the one an instance runs on). */
export function getStateMachineVersion(type: string, version: number, signal?: AbortSignal): Promise<SmDefinition> {
  return request('GET', path`/statemachines/${type}/versions/${String(version)}`, { signal })
}

/** GET /namespaces/{ns}/statemachines/{type}/stats: the instances per state and status. */
export function stateMachineStats(
  namespace: string,
  type: string,
  signal?: AbortSignal,
): Promise<{ type: string; states: SmStateCount[] }> {
  return request('GET', path`/namespaces/${namespace}/statemachines/${type}/stats`, { signal })
}

/** GET /namespaces/{ns}/statemachine-instances: a page of instances (runs), newest first. */
export function listSmInstances(
  namespace: string,
  filter: SmFilter,
  pageToken: string | undefined,
  signal?: AbortSignal,
): Promise<ListResponse> {
  return request('GET', path`/namespaces/${namespace}/statemachine-instances`, {
    query: { ...filter, page_size: '20', page_token: pageToken },
    signal,
  })
}

/** POST /namespaces/{ns}/statemachine-instances: creates an instance. */
export function createSmInstance(namespace: string, req: SmCreateRequest): Promise<{ id: string }> {
  return request('POST', path`/namespaces/${namespace}/statemachine-instances`, { body: { ...req, identity } })
}

/** The path of an instance (its id, which holds '/', escaped). */
function instancePath(namespace: string, id: string, suffix = ''): string {
  return path`/namespaces/${namespace}/statemachine-instances/${id}` + suffix
}

/** GET .../statemachine-instances/{id}: the instance, its actions and variables. */
export function getSmInstance(namespace: string, id: string, signal?: AbortSignal): Promise<SmInstance> {
  return request('GET', instancePath(namespace, id), { signal })
}

/** PUT .../statemachine-instances/{id}: an external change. */
export function updateSmInstance(namespace: string, id: string, req: SmUpdateRequest): Promise<void> {
  return request('PUT', instancePath(namespace, id), { body: { ...req, identity } })
}

/** POST .../{id}/wakeup: wakes the instance (from the states named, when some are). */
export function wakeupSmInstance(namespace: string, id: string, states?: string[]): Promise<void> {
  return request('POST', instancePath(namespace, id, '/wakeup'), { body: { states, identity } })
}

/** POST .../{id}/signal: sets the instance's signal (null clears it) and wakes it. */
export function signalSmInstance(namespace: string, id: string, signal: number | null, reason?: string): Promise<void> {
  return request('POST', instancePath(namespace, id, '/signal'), { body: { signal, reason, identity } })
}

/** The variables as they were after each action: created_vars, then each action's updates in turn. */
export function varsAfterActions(inst: SmInstance): Record<string, string>[] {
  let vars: Record<string, string> = { ...(inst.created_vars ?? {}) }
  return (inst.actions ?? []).map((a) => {
    vars = { ...vars, ...(a.updated ?? {}) }
    return vars
  })
}
