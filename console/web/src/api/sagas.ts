// Sagas (package saga, StackSaga's model): lists of sagas by name, state
// and start time, a saga's record (its steps with their forward and
// compensation states, every tryout, the operators' decisions), and what an
// operator does to them (server/saga.go).
import { identity, path, request } from './client'
import type { BatchRef, Failure, ListResponse, Payload, PauseInfo, RunStatus } from './types'

/** A saga's lifecycle state (StackSaga's). */
export type SagaState =
  | 'started'
  | 'in_progress'
  | 'completed'
  | 'failed'
  | 'compensating'
  | 'compensated'
  | 'compensation_failed'
  | 'disabled'
  | 'terminated'

/** The states in their order (saga.States). */
export const sagaStates: SagaState[] = [
  'started',
  'in_progress',
  'completed',
  'failed',
  'compensating',
  'compensated',
  'compensation_failed',
  'disabled',
  'terminated',
]

/** The states a list can filter by: a disabled saga is a paused run, which lists do not know. */
export const listedSagaStates: SagaState[] = sagaStates.filter((s) => s !== 'disabled')

/** The state of a step's forward run or compensation. */
export type PhaseState = 'none' | 'scheduled' | 'running' | 'retrying' | 'completed' | 'failed' | 'done' | 'skipped'

/** A step's forward run or compensation. */
export interface PhaseRecord {
  state: PhaseState
  /** The registered step that ran it. */
  step?: string
  idempotency_key?: string
  attempts?: number
  error?: string
}

/** A saga step: its forward step and its compensation. */
export interface SagaStep {
  name: string
  /** The parallel group the step ran in (absent or 0: alone). */
  group?: number
  forward: PhaseRecord
  compensation: PhaseRecord
}

/** How a tryout ended (or that it has not). */
export type TryoutOutcome = 'succeeded' | 'retrying' | 'failed' | 'timed_out' | 'canceled' | 'running'

/** One attempt of a forward step or a compensation (StackSaga's tryout). */
export interface Tryout {
  step: string
  phase: 'forward' | 'compensation'
  attempt: number
  idempotency_key: string
  /** When a worker took the attempt (absent: unknown). */
  started?: string
  /** When it ended (absent: running). */
  ended?: string
  outcome: TryoutOutcome
  error_type?: string
  error?: string
  /** What the service answered: the step's result, or the failure's details. */
  answer?: Payload
  executor?: string
}

/** An operator's decision on a failed compensation. */
export type SagaAction = 'retry' | 'done' | 'skip'

/** An operator's decision, as the saga received it. */
export interface OperatorRecord {
  action: SagaAction
  /** The step decided (absent: every failed compensation). */
  step?: string
  note?: string
  identity?: string
  time: string
}

/** A saga as its run's history tells it. */
export interface SagaRecord {
  namespace: string
  id: string
  run_id: string
  name: string
  state: SagaState
  status: RunStatus
  transaction_id: string
  started: string
  closed?: string
  paused?: PauseInfo
  steps: SagaStep[]
  tryouts: Tryout[]
  operators: OperatorRecord[]
  /** How the run ended, when it did not complete. */
  failure?: Failure
}

/** The filter of the sagas list. Times are RFC 3339. */
export interface SagaFilter {
  name?: string
  state?: string
  started_after?: string
  started_before?: string
}

/** What a batch does to each saga its filter selects. */
export type SagaBatchAction = SagaAction | 'terminate'

/** A batch over the sagas a filter selects. */
export interface SagaBatchRequest extends SagaFilter {
  action: SagaBatchAction
  note?: string
}

/** The attributes of a saga's run that lists show. */
export const sagaAttr = { name: 'strand.saga', state: 'strand.saga.state' } as const

/** GET /namespaces/{ns}/sagas: a page of sagas, newest first. */
export function listSagas(
  namespace: string,
  filter: SagaFilter,
  pageToken: string | undefined,
  signal?: AbortSignal,
): Promise<ListResponse> {
  return request('GET', path`/namespaces/${namespace}/sagas`, {
    query: { ...filter, page_size: '25', page_token: pageToken },
    signal,
  })
}

/** The path of a saga (its id, which may hold '/', escaped). */
function sagaPath(namespace: string, id: string, suffix = ''): string {
  return path`/namespaces/${namespace}/sagas/${id}` + suffix
}

/** GET .../sagas/{id}: the saga's record. */
export function getSaga(namespace: string, id: string, signal?: AbortSignal): Promise<SagaRecord> {
  return request('GET', sagaPath(namespace, id), { signal })
}

/** POST .../sagas/{id}/resolve: decides a failed compensation (step empty: every failed one). */
export function resolveSaga(
  namespace: string,
  id: string,
  d: { action: SagaAction; step?: string; note?: string },
): Promise<void> {
  return request('POST', sagaPath(namespace, id, '/resolve'), { body: { ...d, identity } })
}

/** What an operator can do to a saga as a whole. */
export type SagaChange = 'terminate' | 'disable' | 'enable'

/** POST .../sagas/{id}/terminate|disable|enable: ends a saga where it is, pauses or resumes its run. */
export function changeSaga(namespace: string, id: string, change: SagaChange, reason?: string): Promise<void> {
  return request('POST', sagaPath(namespace, id, `/${change}`), { body: { reason, identity } })
}

/** POST /namespaces/{ns}/saga-batches: acts on every saga the filter selects (a kernel batch). */
export function startSagaBatch(namespace: string, req: SagaBatchRequest): Promise<BatchRef> {
  return request('POST', path`/namespaces/${namespace}/saga-batches`, { body: { ...req, identity } })
}

/**
 * A listed saga's state: its attribute, unless its run says otherwise
 * (terminated, or ended without its attribute's end), as the record reads
 * it (saga.stateOf; a disabled saga lists as the state it was in).
 */
export function listedState(status: RunStatus, attr: string | undefined): SagaState | undefined {
  const a = attr as SagaState | undefined
  if (status === 'terminated') return 'terminated'
  if (status === 'completed' && (a === 'started' || a === 'in_progress')) return 'completed'
  if (status !== 'running' && status !== 'completed' && a !== 'compensated') return 'failed'
  return a
}

/** Whether a saga's run still runs: its page refreshes. */
export function sagaLive(s: SagaRecord | undefined): boolean {
  return s === undefined || s.status === 'running'
}
