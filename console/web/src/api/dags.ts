// DAG pipelines (DolphinScheduler's model): definitions stored in versions,
// and their instances, each a run of the built-in workflow strand.DAG
// (server/dag.go).
import { identity, path, request } from './client'
import type { ListResponse, VisibilityRecord } from './types'

/** The workflow type of a DAG instance's run. */
export const dagWorkflowType = 'strand.DAG'

/** An instance's or a task's state, DolphinScheduler's names. */
export type DagState =
  | 'submitted'
  | 'running'
  | 'ready_pause'
  | 'paused'
  | 'ready_stop'
  | 'stop'
  | 'failure'
  | 'success'
  | 'need_fault_tolerance'
  | 'kill'
  | 'waiting_thread'
  | 'waiting_dependency'
  | 'forbidden'
  | 'skipped'
  | 'not_run'

/** A node of a definition's graph. */
export interface DagTask {
  name: string
  type: string
  description?: string
  /** The tasks this one waits for. */
  upstream?: string[]
  retries?: number
  retry_interval?: string
  timeout?: { after: string; action?: string }
  priority?: string
  worker_group?: string
  /** Skipped: its dependants run as if it succeeded. */
  forbidden?: boolean
  local_params?: Record<string, string>
  outputs?: Record<string, string>
  [field: string]: unknown
}

/** A parsed definition. */
export interface DagDefinition {
  name: string
  description?: string
  params?: Record<string, string>
  tasks: DagTask[]
  failure_strategy?: string
  timeout?: string
  worker_group?: string
  priority?: string
}

/** A DAG's release: its current version, and whether it may be started. */
export interface DagRelease {
  current: number
  online: boolean
}

/** A DAG in the list. */
export interface DagSummary extends DagRelease {
  name: string
  versions: number
}

/** A stored version of a definition; body is its text, base64. */
export interface StoredDefinition {
  type: string
  version: number
  sha1?: string
  body: string
  created_at?: string
  modified_at?: string
  modified_by?: string
}

/** A version of a DAG: its release, its stored text and the graph parsed from it. */
export interface DagVersion {
  release: DagRelease
  stored: StoredDefinition
  definition?: DagDefinition
}

/** One thing wrong with a definition's text; line and column count from 1 (0: not known). */
export interface DagProblem {
  line: number
  column?: number
  field?: string
  message: string
}

/** What a check of a text found. */
export interface DagCheck {
  valid: boolean
  problems?: DagProblem[]
  definition?: DagDefinition
}

/** What applying a text did. */
export interface DagApplied {
  name: string
  version: number
  sha1: string
  changed: boolean
  release: DagRelease
  /** What did not stop the apply but may hold a run up (a DAG named that does not exist, a worker group no worker polls). */
  warnings?: DagProblem[]
}

/** A started instance. */
export interface DagStarted {
  workflow_id: string
  run_id: string
  /** What may hold the instance up: a worker group of its tasks that no worker polls. */
  warnings?: DagProblem[]
}

/** One task of an instance. */
export interface DagTaskInstance {
  name: string
  type: string
  /** Missing while the task is not reached (its upstream tasks have not all ended). */
  state?: DagState
  attempt?: number
  submit_time?: string
  start_time?: string
  end_time?: string
  outputs?: Record<string, string>
  error?: string
  host?: string
  pid?: number
  /** The workflow id of a sub-process's instance. */
  child?: string
  /** The tasks a conditions or switch task chose. */
  branch?: string[]
  /** A warn timeout fired. */
  warned?: boolean
  /** The worker group a launched task runs in; a submitted task waits for a worker of it. */
  worker_group?: string
  /** The task queue a worker of the task's group (or a step task's queue) polls. */
  queue?: string
  /** Every attempt of the task, first to last. */
  attempts?: DagTaskAttempt[]
}

/** One attempt of a task: where and when it ran and how it ended. */
export interface DagTaskAttempt {
  attempt: number
  /** running, success, failure or stop. */
  state: DagState
  host?: string
  pid?: number
  start_time?: string
  end_time?: string
  exit_code?: number
  error?: string
  /** The attempt ran past the task's timeout. */
  timed_out?: boolean
}

/** What an instance is and has done. */
export interface DagInstance {
  dag: string
  version: number
  state: DagState
  schedule_time?: string
  start_time?: string
  end_time?: string
  params?: Record<string, string>
  failure_strategy?: string
  tasks: DagTaskInstance[]
  /** The definition's text the instance runs. */
  definition?: string
  error?: string
}

/** An instance's run and what it did. */
export interface DagInstanceDescription {
  run: VisibilityRecord
  instance: DagInstance | null
}

/** The log of one attempt of a task, with what the attempt was. */
export interface DagTaskLog {
  task: string
  attempt: number
  /** How many attempts the task has had so far. */
  attempts?: number
  /** The attempt runs: log is the end of it, of size bytes in all. */
  running: boolean
  size: number
  /** A shell task's stderr lines start with stderrPrefix. */
  log: string
  skipped?: number
  state?: DagState
  host?: string
  pid?: number
  start_time?: string
  end_time?: string
  exit_code?: number
  error?: string
  timed_out?: boolean
}

/** What starts each line a shell task wrote to stderr, in its log. */
export const stderrPrefix = '[stderr] '

/** What starting an instance takes; every field is optional. */
export interface DagRunRequest {
  id?: string
  version?: number
  params?: Record<string, string>
  failure_strategy?: string
  worker_group?: string
  start_from?: string[]
  schedule_time?: string
}

/** An instance of a namespace. */
export interface DagInstanceRef {
  namespace: string
  workflowId: string
}

/** The text of a stored version (its body is base64 of UTF-8). */
export function storedText(d: StoredDefinition): string {
  const bytes = Uint8Array.from(atob(d.body), (c) => c.charCodeAt(0))
  return new TextDecoder().decode(bytes)
}

/** POST /dag-check: the problems of a text, each with its line and column; nothing is stored. */
export function checkDag(text: string, signal?: AbortSignal): Promise<DagCheck> {
  return request('POST', '/dag-check', { body: { text }, signal })
}

/** POST /dags: stores the text as a new version when it changed (it becomes current). */
export function applyDag(text: string, namespace?: string): Promise<DagApplied> {
  return request('POST', '/dags', { body: { text, identity, namespace } })
}

/** GET /dags: every DAG with its release. */
export function listDags(signal?: AbortSignal): Promise<{ dags: DagSummary[] }> {
  return request('GET', '/dags', { signal })
}

/** GET /dags/{name}: the release and the current version. */
export function getDag(name: string, signal?: AbortSignal): Promise<DagVersion> {
  return request('GET', path`/dags/${name}`, { signal })
}

/** GET /dags/{name}/versions: every version, oldest first. */
export function listDagVersions(name: string, signal?: AbortSignal): Promise<{ versions: StoredDefinition[] }> {
  return request('GET', path`/dags/${name}/versions`, { signal })
}

/** GET /dags/{name}/versions/{v}: one version, its text and graph. */
export function getDagVersion(name: string, version: number, signal?: AbortSignal): Promise<DagVersion> {
  return request('GET', path`/dags/${name}/versions/${String(version)}`, { signal })
}

/** POST /dags/{name}/release: puts the DAG online or offline, or makes a version current. */
export function releaseDag(name: string, change: { online?: boolean; current?: number }): Promise<DagRelease> {
  return request('POST', path`/dags/${name}/release`, { body: { ...change, identity } })
}

/** POST /namespaces/{ns}/dags/{name}/instances: starts an instance. */
export function runDag(namespace: string, name: string, req: DagRunRequest): Promise<DagStarted> {
  return request('POST', path`/namespaces/${namespace}/dags/${name}/instances`, { body: { ...req, identity } })
}

/** GET /namespaces/{ns}/dags/{name}/instances: a page of a DAG's instances (runs), newest first. */
export function listDagInstances(
  namespace: string,
  name: string,
  pageToken?: string,
  signal?: AbortSignal,
): Promise<ListResponse> {
  return request('GET', path`/namespaces/${namespace}/dags/${name}/instances`, {
    query: { page_size: '20', page_token: pageToken },
    signal,
  })
}

function instancePath({ namespace, workflowId }: DagInstanceRef, suffix = ''): string {
  return path`/namespaces/${namespace}/dag-instances/${workflowId}` + suffix
}

/**
 * GET .../dag-instances/{id}: the instance's run (its latest) and its tasks.
 * An instance that has just started may have no tasks yet (null): they are
 * an empty list here.
 */
export async function describeDagInstance(ref: DagInstanceRef, signal?: AbortSignal): Promise<DagInstanceDescription> {
  const d = await request<DagInstanceDescription>('GET', instancePath(ref), { signal })
  return d.instance ? { ...d, instance: { ...d.instance, tasks: d.instance.tasks ?? [] } } : d
}

/** POST .../command: pauses, resumes or stops a running instance. */
export function commandDagInstance(ref: DagInstanceRef, action: 'pause' | 'resume' | 'stop'): Promise<void> {
  return request('POST', instancePath(ref, '/command'), { body: { action, identity } })
}

/** POST .../rerun: starts an ended instance again, whole or from its failed tasks. */
export function rerunDagInstance(ref: DagInstanceRef, failed: boolean): Promise<DagStarted> {
  return request('POST', instancePath(ref, '/rerun'), { body: { failed, identity } })
}

/** GET .../tasks/{task}/log: the log of a task's last attempt. */
/** The log of attempt `attempt` of a task (0: its last). */
export function dagTaskLog(
  ref: DagInstanceRef,
  task: string,
  attempt: number,
  signal?: AbortSignal,
): Promise<DagTaskLog> {
  const q = attempt > 0 ? `?attempt=${attempt}` : ''
  return request('GET', instancePath(ref, path`/tasks/${task}/log`) + q, { signal })
}
