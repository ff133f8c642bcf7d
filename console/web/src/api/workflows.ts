import { path, request } from './client'
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
} from './types'

/** A run of a workflow in a namespace. */
export interface RunRef {
  namespace: string
  workflowId: string
  runId: string
}

/** How the console names itself in the history of the runs it acts on. */
const identity = 'strand-console'

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
