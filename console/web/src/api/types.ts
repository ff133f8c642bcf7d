// The API's request and response bodies, by their JSON names (package api
// and package store of the Go module). Times are RFC 3339 strings; durations
// are integers of nanoseconds.

/** A run's status: running, or how it closed. */
export type RunStatus =
  'running' | 'completed' | 'failed' | 'canceled' | 'terminated' | 'continued_as_new' | 'timed_out'

/** Every status, in the order the console lists them. */
export const runStatuses: readonly RunStatus[] = [
  'running',
  'completed',
  'failed',
  'canceled',
  'terminated',
  'continued_as_new',
  'timed_out',
]

/**
 * A payload (workflow input, result, signal value, query args and answer,
 * memo value, event payload) is any JSON value as it is, except for three
 * wrapped forms that payload.ts decodes: {"$base64": "..."} for bytes that
 * are not JSON, {"$document": {id, size}} for a payload stored apart, and
 * {"$json": value} for a value that would look like one of them.
 */
export type Payload = unknown

/** Nanoseconds. */
export type Duration = number

/** A namespace and how long its closed runs are kept. */
export interface Namespace {
  name: string
  description?: string
  retention?: Duration
  data?: Record<string, string>
  version?: number
  created_at?: string
  updated_at?: string
}

/** GET /namespaces. */
export interface NamespaceList {
  namespaces: Namespace[]
}

/** A running Strand process, as the nodes table records it. */
export interface Node {
  id: string
  host: string
  pid: number
  group?: string
  /** The URL the other nodes reach it at. */
  address?: string
  started_at: string
  heartbeat_at: string
  /** When it stops counting as live unless it heartbeats again. */
  expires_at: string
}

/** GET /nodes. */
export interface NodeList {
  nodes: Node[]
}

/** A shard as the store records it, and whether the node answering serves it. */
export interface ShardInfo {
  id: number
  /** The owning node's id ('' for none yet). */
  owner: string
  range_id: number
  serving: boolean
}

/** GET /shards. */
export interface ShardList {
  shards: ShardInfo[]
}

/** A run's key as the store writes it. */
export interface RunKey {
  ns: string
  wf: string
  run: string
}

/** A failure: of a step, a child, the workflow or a query. */
export interface Failure {
  kind: string
  type?: string
  message: string
  non_retryable?: boolean
  step?: string
  seq?: number
  attempt?: number
  workflow_id?: string
  run_id?: string
  details?: Payload
  cause?: Failure
}

/** The filter of workflow-search and workflow-count. */
export interface ListRequest {
  workflow_id?: string
  workflow_type?: string
  statuses?: RunStatus[]
  started_after?: string
  started_before?: string
  business_key?: string
  /** Runs whose workflow id starts with this. */
  workflow_id_prefix?: string
  /** Runs whose business key starts with this. */
  business_key_prefix?: string
  attributes?: Record<string, string>
  /** Runs that closed at or after this (open runs are left out). */
  closed_after?: string
  /** Runs that closed before this (open runs are left out). */
  closed_before?: string
  /** Runs of these types are left out. */
  exclude_workflow_types?: string[]
  /** newest (start time, latest first; the default) or oldest. */
  order?: 'newest' | 'oldest'
  page_size?: number
  page_token?: string
}

/** What listing shows of a run. */
export interface VisibilityRecord {
  namespace: string
  workflow_id: string
  run_id: string
  workflow_type: string
  status: RunStatus
  start_time: string
  close_time?: string
  business_key?: string
  attributes?: Record<string, string>
  version: number
}

/** A page of runs. */
export interface ListResponse {
  runs: VisibilityRecord[] | null
  next_page_token?: string
}

/** A count of runs. */
export interface Count {
  count: number
}

/** The runs matching a filter in each status, by status. */
export interface StatusCounts {
  counts: Partial<Record<RunStatus, number>>
}

/** Who paused a run, when and why. */
export interface PauseInfo {
  identity?: string
  time: string
  reason?: string
}

/** A step that has not closed. */
export interface PendingStep {
  seq: number
  name: string
  state: string
  attempt: number
  scheduled_time: string
  started_time?: string
  last_heartbeat?: string
  last_failure?: string
}

/** A timer that has not fired. */
export interface PendingTimer {
  seq: number
  fire_time: string
}

/** A child workflow that has not closed. */
export interface PendingChild {
  seq: number
  workflow_id: string
  run_id?: string
  workflow_type: string
}

/** What describe shows of a run. */
export interface Description {
  namespace: string
  workflow_id: string
  run_id: string
  workflow_type: string
  status: RunStatus
  queue: string
  start_time: string
  close_time?: string
  next_event_id: number
  business_key?: string
  attributes?: Record<string, string>
  memo?: Record<string, Payload>
  parent?: RunKey
  /** Set while an operator holds the run paused. */
  paused?: PauseInfo
  pending_steps?: PendingStep[]
  pending_timers?: PendingTimer[]
  pending_children?: PendingChild[]
  workflow_task_failure?: Failure
}

/**
 * POST /namespaces/{ns}/workflows: what a new run starts with. The input and
 * the memo's values are payloads, sent as they are (a document reference is
 * refused: send its value).
 */
export interface StartRequest {
  workflow_id: string
  workflow_type: string
  input?: Payload
  queue?: string
  priority?: number
  /** Makes a retried start idempotent: the same id answers with the run it started. */
  request_id?: string
  run_timeout?: Duration
  memo?: Record<string, Payload>
  business_key?: string
  attributes?: Record<string, string>
  identity?: string
}

/** The run a start created, or found for a request id it had seen (started false). */
export interface StartResponse {
  run_id: string
  started: boolean
}

/** A step's queue, timeouts and retry policy. */
export interface StepOptions {
  queue?: string
  priority?: number
  schedule_to_start?: Duration
  start_to_close?: Duration
  schedule_to_close?: Duration
  heartbeat?: Duration
  retry?: {
    initial_interval?: Duration
    backoff_coefficient?: number
    maximum_interval?: Duration
    maximum_attempts?: number
    non_retryable_types?: string[]
  }
}

/** A child workflow's options (or a continued-as-new run's). */
export interface ChildOptions {
  namespace?: string
  workflow_id?: string
  queue?: string
  priority?: number
  run_timeout?: Duration
  parent_close?: number
  id_reuse_policy?: number
  memo?: Record<string, Payload>
  business_key?: string
  attributes?: Record<string, string>
}

/** What happened in a run. */
export type EventType =
  | 'WorkflowStarted'
  | 'StepCompleted'
  | 'StepFailed'
  | 'StepTimedOut'
  | 'StepCanceled'
  | 'TimerFired'
  | 'SignalReceived'
  | 'CancelRequested'
  | 'ChildStarted'
  | 'ChildStartFailed'
  | 'ChildClosed'
  | 'ExternalSignaled'
  | 'ExternalCancelRequested'
  | 'WorkflowTaskCompleted'
  | 'StepScheduled'
  | 'StepCancelScheduled'
  | 'TimerStarted'
  | 'TimerCanceled'
  | 'ChildInitiated'
  | 'SignalExternalInitiated'
  | 'CancelExternalInitiated'
  | 'SideEffectRecorded'
  | 'WorkflowCompleted'
  | 'WorkflowFailed'
  | 'WorkflowCanceled'
  | 'WorkflowContinuedAsNew'
  | 'WorkflowTerminated'
  | 'WorkflowTimedOut'
  | 'WorkflowTaskFailed'
  | 'StepAttemptFailed'
  | 'RunRecovered'
  | 'WorkflowPaused'
  | 'WorkflowResumed'
  | 'WorkflowReset'
  | 'AttributesUpserted'

/** One entry of a run's history; each type uses the fields it needs. */
export interface HistoryEvent {
  id: number
  type: EventType
  time: string
  seq?: number
  name?: string
  attempt?: number
  payload?: Payload
  failure?: Failure
  reason?: string
  identity?: string
  step?: StepOptions
  timer?: { duration: Duration; fire_time: string }
  child?: { options: ChildOptions; run_id?: string; status?: string }
  start?: {
    queue?: string
    priority?: number
    run_timeout?: Duration
    parent?: RunKey
    parent_seq?: number
    continued_from?: string
    business_key?: string
    memo?: Record<string, Payload>
    attributes?: Record<string, string>
    request_id?: string
    attempt?: number
  }
  target?: { namespace?: string; workflow_id: string; run_id?: string }
  /** An AttributesUpserted event's changes: an empty value removes the attribute. */
  attributes?: Record<string, string>
  recovery?: { from_node: string; to_node: string; reoffered: number; workflow_task?: boolean; steps?: number[] }
  /** Audit details the workflow task or the step attempt attached (large ones as documents). */
  details?: AuditDetail[]
}

/** A named value workflow or step code attached to an event for people to read. */
export interface AuditDetail {
  name: string
  value: Payload
}

/** A page of events. */
export interface HistoryPage {
  events: HistoryEvent[] | null
  next_page_token?: string
}

/** A query's answer. */
export interface QueryResult {
  result?: Payload
}

/** GET .../documents/{id}: a payload stored as a document. */
export interface DocumentValue {
  value: Payload
}

/** A task queue's kind: workflow tasks or step tasks. */
export type QueueKind = 'workflow' | 'step'

/** A worker polling a queue, seen within the last 5 minutes. */
export interface PollerInfo {
  /** What the worker calls itself. */
  identity: string
  /** The node the worker polls. */
  node?: string
  /** When a poll of the worker last began or ended. */
  last_seen: string
  /** Whether a poll of the worker waits now. */
  polling: boolean
}

/** A task queue: its backlog, its workers and how its tasks met them. */
export interface QueueInfo {
  namespace: string
  name: string
  kind: QueueKind
  /** Tasks waiting for a worker now. */
  backlog: number
  /** The latest first. */
  pollers: PollerInfo[] | null
  /** Tasks handed straight to a waiting worker. */
  sync_matched: number
  /** Tasks that waited in the backlog first. */
  backlogged: number
}

/** GET /namespaces/{ns}/queues. */
export interface QueueList {
  queues: QueueInfo[] | null
  /** A node of the cluster did not answer: its workers and backlogs are missing. */
  partial?: boolean
}

/** The runs started and closed in a minute, by how they closed. */
export interface MinuteStats {
  /** The start of the minute. */
  time: string
  started: number
  completed: number
  failed: number
  timed_out: number
  canceled: number
  terminated: number
  continued_as_new: number
}

/** A workflow type's runs over the last hour. */
export interface TypeStats {
  workflow_type: string
  started: number
  /** Runs closed, and those of them that failed or timed out. */
  closed: number
  failed: number
  /** Over the closed runs, from start to close. */
  mean_duration: Duration
  max_duration: Duration
}

/** GET /namespaces/{ns}/overview: what the engine did in a namespace in the last hour. */
export interface Overview {
  namespace: string
  /** The last 60 minutes, the oldest first. */
  minutes: MinuteStats[] | null
  types: TypeStats[] | null
  /** When the oldest answering node started counting. */
  since: string
  /** A node of the cluster did not answer: the counts miss its shards' runs. */
  partial?: boolean
}

/** Where in a run's history a reset goes back to (always just before a workflow task). */
export type ResetPoint = 'last_workflow_task' | 'first_failed_step' | 'before_event'

/** Every reset point, the default first. */
export const resetPoints: readonly ResetPoint[] = ['last_workflow_task', 'first_failed_step', 'before_event']

/** POST .../reset: what a reset takes besides the run. */
export interface ResetOptions {
  point: ResetPoint
  /** The event the run goes back to before (before_event only). */
  event_id?: number
  /** Leaves out the signals received after the point; by default the new run receives them again. */
  skip_signals?: boolean
  reason?: string
}

// ---- Schedules (api/schedule.go) ----

/** When a schedule fires. */
export interface ScheduleSpec {
  /** Cron expressions of 5 or 6 fields, names (@daily) and intervals ("@every 90s"). */
  cron: string[]
  /** The IANA time zone the expressions are read in (UTC when empty). */
  time_zone?: string
  /** No fire before start, none at or after end. */
  start?: string
  end?: string
  jitter?: Duration
}

/** The workflow a schedule starts at each fire. */
export interface ScheduleAction {
  workflow_type: string
  input?: Payload
  queue?: string
  priority?: number
  run_timeout?: Duration
  memo?: Record<string, Payload>
  attributes?: Record<string, string>
}

/** What a fire does while a run the schedule started is still open. */
export type OverlapPolicy = 'skip' | 'buffer_one' | 'buffer_all' | 'cancel_other' | 'terminate_other' | 'allow_all'

/** Every overlap policy, the default first. */
export const overlapPolicies: readonly OverlapPolicy[] = [
  'skip',
  'buffer_one',
  'buffer_all',
  'cancel_other',
  'terminate_other',
  'allow_all',
]

/** Which fires that came due while Strand was down a schedule takes. */
export type CatchupPolicy = 'latest' | 'none' | 'all'

/** Every catch-up policy, the default first. */
export const catchupPolicies: readonly CatchupPolicy[] = ['latest', 'none', 'all']

/** What a schedule does with overlaps and missed fires. */
export interface SchedulePolicies {
  overlap?: OverlapPolicy
  /** How late a missed fire may still be taken (0: an hour). */
  catchup_window?: Duration
  /** Which missed fires are taken after downtime (empty: latest). */
  catchup?: CatchupPolicy
}

/** What a schedule does and when. */
export interface Schedule {
  spec: ScheduleSpec
  action: ScheduleAction
  policies?: SchedulePolicies
  /** When positive, the fires the schedule takes in all (triggers and backfills aside). */
  action_limit?: number
  /** The state it is created in (describe: its state now). */
  paused?: boolean
  note?: string
}

/** A schedule as the list shows it. */
export interface ScheduleSummary {
  schedule_id: string
  workflow_type: string
  /** Absent when too long for a list. */
  spec?: ScheduleSpec
  paused?: boolean
  next_fire?: string
  create_time: string
}

/** GET /namespaces/{ns}/schedules. */
export interface ScheduleList {
  schedules: ScheduleSummary[] | null
  next_page_token?: string
}

/** How a schedule took an action: at a fire time, triggered, or backfilled. */
export type ScheduleActionKind = 'scheduled' | 'trigger' | 'backfill'

/** One action a schedule took. */
export interface ScheduledRun {
  /** The time the action stands for (its workflow id has it). */
  fire_time: string
  /** When it was taken. */
  time: string
  kind: ScheduleActionKind
  workflow_id: string
  run_id?: string
  /** The run's status, or starting, or not_started. */
  status: string
  reason?: string
}

/** A backfill in progress. */
export interface BackfillProgress {
  start: string
  end: string
  parallelism: number
  total: number
  started: number
  closed: number
  identity?: string
}

/** GET /namespaces/{ns}/schedules/{id}. */
export interface ScheduleDescription {
  namespace: string
  schedule_id: string
  schedule: Schedule
  /** The next 10 fire times (none while paused, or past the end or the action limit). */
  next_fires: string[] | null
  /** The last actions, oldest first. */
  recent: ScheduledRun[] | null
  /** The runs the schedule started that are still open. */
  running: ScheduledRun[] | null
  buffered: number
  backfills?: BackfillProgress[] | null
  actions: number
  triggers: number
  backfilled: number
  skipped: number
  missed: number
  paused_fires: number
  /** Who last paused or unpaused it, and when. */
  paused_by?: string
  paused_at?: string
  create_time: string
  update_time: string
  /** The run that carries the schedule now. */
  workflow_id: string
  run_id: string
}

// ---- Batches (api/batch.go) ----

/** What a batch does to each run. */
export type BatchOperation = 'signal' | 'cancel' | 'terminate' | 'reset' | 'pause' | 'resume'

/** Every batch operation. */
export const batchOperations: readonly BatchOperation[] = ['signal', 'cancel', 'terminate', 'reset', 'pause', 'resume']

/** POST /namespaces/{ns}/batches. */
export interface StartBatchRequest {
  batch_id?: string
  /** Selects the runs, as workflow-search does (its page fields unused). */
  filter: ListRequest
  operation: BatchOperation
  signal_name?: string
  signal_input?: Payload
  reset_point?: ResetPoint
  reset_event_id?: number
  reason?: string
  /** Runs acted on a second (0: 50). */
  rate?: number
  identity?: string
}

/** A batch's name. */
export interface BatchRef {
  namespace: string
  batch_id: string
}

/** A batch's state: running, completed, stopped or failed. */
export type BatchState = 'running' | 'completed' | 'stopped' | 'failed'

/** A batch as the list shows it. */
export interface BatchSummary {
  batch_id: string
  operation: BatchOperation
  state: BatchState
  start_time: string
  close_time?: string
}

/** GET /namespaces/{ns}/batches. */
export interface BatchList {
  batches: BatchSummary[] | null
  next_page_token?: string
}

/** What a batch did to one run. */
export interface BatchRunResult {
  workflow_id: string
  run_id: string
  /** Empty when the operation succeeded. */
  error?: string
  /** A reset's new run. */
  new_run_id?: string
}

/** GET /namespaces/{ns}/batches/{id}. */
export interface BatchDescription {
  namespace: string
  batch_id: string
  request: StartBatchRequest
  state: BatchState
  /** Runs acted on, split into succeeded and failed. */
  done: number
  succeeded: number
  failed: number
  /** The last results, failures kept first. */
  results: BatchRunResult[] | null
  start_time: string
  close_time?: string
  stopped_by?: string
}
