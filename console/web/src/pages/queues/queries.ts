import { useQuery } from '@tanstack/react-query'
import { listQueues } from '../../api/monitor'
import type { PollerInfo, QueueInfo, QueueKind, QueueList } from '../../api/types'

/** How often the queues page refreshes while it is live. */
export const refreshMs = 3000

/** Query keys of the queues page. */
export const queuesKeys = {
  list: (namespace: string) => ['queues', namespace] as const,
}

/** A queue name with its workflow and step queues (either may be missing). */
export interface QueueGroup {
  name: string
  kinds: QueueInfo[]
}

/** The order kinds are shown in within a queue. */
const kindOrder: Record<QueueKind, number> = { workflow: 0, step: 1 }

/** The namespace's task queues grouped by name, refreshed every refreshMs while live. */
export function useQueues(namespace: string, live: boolean) {
  return useQuery({
    queryKey: queuesKeys.list(namespace),
    queryFn: ({ signal }) => listQueues(namespace, signal),
    select: selectGroups,
    refetchInterval: live ? refreshMs : false,
  })
}

const selectGroups = (list: QueueList) => ({ groups: groupQueues(list.queues ?? []), partial: list.partial ?? false })

/** Groups queues by name (sorted), the workflow queue before the step queue. */
export function groupQueues(queues: QueueInfo[]): QueueGroup[] {
  const groups = new Map<string, QueueInfo[]>()
  for (const q of queues) {
    const kinds = groups.get(q.name) ?? []
    kinds.push({ ...q, pollers: q.pollers ?? [] })
    groups.set(q.name, kinds)
  }
  return [...groups]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, kinds]) => ({
      name,
      kinds: kinds.sort((a, b) => (kindOrder[a.kind] ?? 2) - (kindOrder[b.kind] ?? 2)),
    }))
}

/** The share of tasks handed straight to a waiting worker (undefined when no task came). */
export function syncMatchRate(q: Pick<QueueInfo, 'sync_matched' | 'backlogged'>): number | undefined {
  const total = q.sync_matched + q.backlogged
  return total > 0 ? q.sync_matched / total : undefined
}

/** How many of a queue's pollers poll now. */
export function pollingNow(pollers: PollerInfo[] | null): number {
  return (pollers ?? []).filter((p) => p.polling).length
}
