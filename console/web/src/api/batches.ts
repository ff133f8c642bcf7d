import { identity, path, request } from './client'
import type { BatchDescription, BatchList, BatchRef, StartBatchRequest } from './types'

/**
 * POST /namespaces/{ns}/batches: starts a batch operation on every run the
 * filter matches, as a durable job. Answers with the batch's id.
 */
export function startBatch(namespace: string, req: StartBatchRequest): Promise<BatchRef> {
  return request('POST', path`/namespaces/${namespace}/batches`, { body: { ...req, identity } })
}

/** GET /namespaces/{ns}/batches: the namespace's batches, newest first. */
export function listBatches(namespace: string, signal?: AbortSignal): Promise<BatchList> {
  return request('GET', path`/namespaces/${namespace}/batches`, { signal })
}

/** GET .../batches/{id}: a batch's progress and a result per run. */
export function describeBatch(namespace: string, batchId: string, signal?: AbortSignal): Promise<BatchDescription> {
  return request('GET', path`/namespaces/${namespace}/batches/${batchId}`, { signal })
}

/** POST .../batches/{id}/stop: stops a batch; the runs it acted on stay as they are. */
export function stopBatch(namespace: string, batchId: string): Promise<void> {
  return request('POST', path`/namespaces/${namespace}/batches/${batchId}/stop`, { body: { identity } })
}
