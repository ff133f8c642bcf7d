import { identity, path, request } from './client'
import type {
  Count,
  Description,
  DocumentValue,
  HistoryEvent,
  HistoryPage,
  ListRequest,
  ListResponse,
  Payload,
  QueryResult,
  ResetOptions,
  StartRequest,
  StartResponse,
  StatusCounts,
} from './types'

/** A run of a workflow in a namespace. */
export interface RunRef {
  namespace: string
  workflowId: string
  runId: string
}

function runPath({ namespace, workflowId }: RunRef, suffix = ''): string {
  return path`/namespaces/${namespace}/workflows/${workflowId}` + suffix
}

/** POST /namespaces/{ns}/workflow-search: a page of runs matching a filter. */
export function searchWorkflows(namespace: string, filter: ListRequest, signal?: AbortSignal): Promise<ListResponse> {
  return request('POST', path`/namespaces/${namespace}/workflow-search`, { body: filter, signal })
}

/** POST /namespaces/{ns}/workflow-count: how many runs match a filter. */
export function countWorkflows(namespace: string, filter: ListRequest, signal?: AbortSignal): Promise<Count> {
  return request('POST', path`/namespaces/${namespace}/workflow-count`, { body: filter, signal })
}

/** POST /namespaces/{ns}/workflow-status-counts: how many runs match a filter, in each status. */
export function countWorkflowsByStatus(namespace: string, filter: ListRequest, signal?: AbortSignal): Promise<StatusCounts> {
  return request('POST', path`/namespaces/${namespace}/workflow-status-counts`, { body: filter, signal })
}

/**
 * POST /namespaces/{ns}/workflows: starts a run, named by the console's
 * identity. It is refused (already_started) while a run of the workflow id
 * runs; a request id the workflow id's current run started with answers
 * with that run.
 */
export function startWorkflow(namespace: string, req: StartRequest): Promise<StartResponse> {
  return request('POST', path`/namespaces/${namespace}/workflows`, { body: { ...req, identity } })
}

/**
 * A fresh request id, a random UUID. crypto.randomUUID exists only in a
 * secure context (https, or an address of this machine): a console served
 * over plain http from elsewhere makes one from crypto.getRandomValues.
 */
export function newRequestId(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID()
  const b = crypto.getRandomValues(new Uint8Array(16))
  b[6] = (b[6]! & 0x0f) | 0x40 // version 4
  b[8] = (b[8]! & 0x3f) | 0x80 // variant 10
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
  return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-')
}

/** GET /namespaces/{ns}/workflows/{id}?run_id=: a run with its pending work. */
export function describeWorkflow(run: RunRef, signal?: AbortSignal): Promise<Description> {
  return request('GET', runPath(run), { query: { run_id: run.runId }, signal })
}

/** GET .../history: one page of a run's events. */
export function getHistoryPage(run: RunRef, pageToken?: string, signal?: AbortSignal): Promise<HistoryPage> {
  return request('GET', runPath(run, '/history'), { query: { run_id: run.runId, page_token: pageToken }, signal })
}

/** Reads a run's whole history, page after page. */
export async function getHistory(run: RunRef, signal?: AbortSignal): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = []
  let token: string | undefined
  do {
    const page = await getHistoryPage(run, token, signal)
    events.push(...(page.events ?? []))
    token = page.next_page_token
  } while (token)
  return events
}

/** GET .../documents/{id}?run_id=: the value of a payload the run stores as a document. */
export function getDocument(run: RunRef, id: string, signal?: AbortSignal): Promise<DocumentValue> {
  return request('GET', runPath(run, path`/documents/${id}`), { query: { run_id: run.runId }, signal })
}

/** POST .../signals: sends the signal name with a JSON value. */
export function signalWorkflow(run: RunRef, name: string, input: Payload): Promise<void> {
  return request('POST', runPath(run, '/signals'), { body: { run_id: run.runId, name, input, identity } })
}

/** POST .../queries: asks the run's query handler name, with JSON args. */
export function queryWorkflow(run: RunRef, name: string, input: Payload): Promise<QueryResult> {
  return request('POST', runPath(run, '/queries'), { body: { run_id: run.runId, name, input } })
}

/** POST .../cancel: asks the run to cancel. */
export function cancelWorkflow(run: RunRef, reason: string): Promise<void> {
  return request('POST', runPath(run, '/cancel'), { body: { run_id: run.runId, reason, identity } })
}

/** POST .../terminate: closes the run at once. */
export function terminateWorkflow(run: RunRef, reason: string): Promise<void> {
  return request('POST', runPath(run, '/terminate'), { body: { run_id: run.runId, reason, identity } })
}

/**
 * POST .../pause: holds the run: no workflow task or step is dispatched
 * until it is resumed (a closed run is refused: run_closed).
 */
export function pauseWorkflow(run: RunRef, reason: string): Promise<void> {
  return request('POST', runPath(run, '/pause'), { body: { run_id: run.runId, reason, identity } })
}

/** POST .../resume: lets a paused run go on, with what waited. */
export function resumeWorkflow(run: RunRef, reason: string): Promise<void> {
  return request('POST', runPath(run, '/resume'), { body: { run_id: run.runId, reason, identity } })
}

/**
 * POST .../reset: a new run of the workflow id continues from a point of
 * the run's history; the run, if open, is terminated. A point the run
 * lacks is refused (failed_precondition). Answers with the new run.
 */
export function resetWorkflow(run: RunRef, opts: ResetOptions): Promise<StartResponse> {
  return request('POST', runPath(run, '/reset'), { body: { run_id: run.runId, ...opts, identity } })
}

/**
 * POST .../rerun: starts a closed run again with its type, input and
 * options, under its workflow id. The request id makes a retried rerun
 * start one run.
 */
export function rerunWorkflow(run: RunRef, requestId: string): Promise<StartResponse> {
  return request('POST', runPath(run, '/rerun'), { body: { run_id: run.runId, request_id: requestId, identity } })
}
