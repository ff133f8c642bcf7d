import { useQuery } from '@tanstack/react-query'
import { getOverview } from '../../api/monitor'

/** How often the overview refreshes while it is live. */
export const refreshMs = 10_000

/** Query keys of the overview page. */
export const overviewKeys = {
  overview: (namespace: string) => ['overview', namespace] as const,
}

/** The namespace's last hour, refreshed every refreshMs while live. */
export function useOverview(namespace: string, live: boolean) {
  return useQuery({
    queryKey: overviewKeys.overview(namespace),
    queryFn: ({ signal }) => getOverview(namespace, signal),
    refetchInterval: live ? refreshMs : false,
  })
}
