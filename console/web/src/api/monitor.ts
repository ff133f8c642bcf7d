import { path, request } from './client'
import type { Overview, QueueList } from './types'

// The monitoring routes exist only on a server whose engine implements
// api.Monitoring; another answers them 404. In a cluster, the node asked
// gathers every live node's part.

/** GET /namespaces/{ns}/queues: the task queues with their backlog and pollers. */
export function listQueues(namespace: string, signal?: AbortSignal): Promise<QueueList> {
  return request('GET', path`/namespaces/${namespace}/queues`, { signal })
}

/** GET /namespaces/{ns}/overview: runs started and closed per minute over the last hour, and per type. */
export function getOverview(namespace: string, signal?: AbortSignal): Promise<Overview> {
  return request('GET', path`/namespaces/${namespace}/overview`, { signal })
}
