import { queryOptions, useQuery } from '@tanstack/react-query'
import { listNamespaces } from '../../api/namespaces'

/** The namespaces, for the selector in the header. */
export const namespacesQuery = queryOptions({
  queryKey: ['namespaces'],
  queryFn: ({ signal }) => listNamespaces(signal),
  select: (list) => list.namespaces,
  staleTime: 60_000,
})

/** The namespaces to choose from. */
export function useNamespaces() {
  return useQuery(namespacesQuery)
}
