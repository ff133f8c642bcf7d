import { keepPreviousData, useQueries, useQuery } from '@tanstack/react-query'
import { countWorkflows, searchWorkflows } from '../../api/workflows'
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
export function useRunsPage(namespace: string, filter: ListRequest, live: boolean) {
  return useQuery({
    queryKey: runsKeys.page(namespace, filter),
    queryFn: ({ signal }) => searchWorkflows(namespace, filter, signal),
    placeholderData: keepPreviousData,
    refetchInterval: live ? refreshMs : false,
  })
}

/** The number of runs matching filter in each status, one call a status. */
export function useStatusCounts(namespace: string, filter: ListRequest, live: boolean) {
  return useQueries({
    queries: runStatuses.map((status) => {
      const f: ListRequest = { ...filter, statuses: [status] }
      return {
        queryKey: runsKeys.count(namespace, f),
        queryFn: ({ signal }: { signal: AbortSignal }) => countWorkflows(namespace, f, signal),
        placeholderData: keepPreviousData,
        refetchInterval: live ? refreshMs : (false as const),
      }
    }),
    combine: (results) => ({
      counts: Object.fromEntries(runStatuses.map((s, i) => [s, results[i]?.data?.count])) as Record<
        RunStatus,
        number | undefined
      >,
      error: results.find((r) => r.error)?.error,
    }),
  })
}
