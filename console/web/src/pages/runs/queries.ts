import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { countWorkflowsByStatus, searchWorkflows } from '../../api/workflows'
import type { ListRequest, RunStatus } from '../../api/types'
import { runStatuses } from '../../api/types'

/** How often the runs page refreshes while it is live. */
export const refreshMs = 5000

/** Query keys of the runs page; an action on a run invalidates runsKeys.all(ns). */
export const runsKeys = {
  all: (namespace: string) => ['runs', namespace] as const,
  page: (namespace: string, filter: ListRequest) => ['runs', namespace, 'search', filter] as const,
  count: (namespace: string, filter: ListRequest) => ['runs', namespace, 'count', filter] as const,
}

/** One page of runs matching filter (status, size and page token included). */
export function useRunsPage(namespace: string, filter: ListRequest, live: boolean, enabled = true) {
  return useQuery({
    queryKey: runsKeys.page(namespace, filter),
    queryFn: ({ signal }) => searchWorkflows(namespace, filter, signal),
    placeholderData: keepPreviousData,
    refetchInterval: live ? refreshMs : false,
    enabled,
  })
}

/** The number of runs matching filter in each status, in one request. */
export function useStatusCounts(namespace: string, filter: ListRequest, live: boolean) {
  const q = useQuery({
    queryKey: runsKeys.count(namespace, filter),
    queryFn: ({ signal }) => countWorkflowsByStatus(namespace, filter, signal),
    placeholderData: keepPreviousData,
    refetchInterval: live ? refreshMs : false,
  })
  const counts = Object.fromEntries(runStatuses.map((s) => [s, q.data?.counts[s] ?? (q.data ? 0 : undefined)])) as Record<
    RunStatus,
    number | undefined
  >
  return { counts, error: q.error }
}
