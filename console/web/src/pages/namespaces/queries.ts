import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { createNamespace, updateNamespace } from '../../api/namespaces'
import type { Namespace } from '../../api/types'
import { namespacesQuery } from '../root/queries'

/**
 * Every namespace. The query is the header selector's own, so that what
 * changes here refreshes the selector too; the page reads it afresh.
 */
export function useNamespaceList() {
  return useQuery({ ...namespacesQuery, staleTime: 2000 })
}

/** Refreshes the namespaces: this page's list and the header's selector. */
function useInvalidate() {
  const qc = useQueryClient()
  return () => qc.invalidateQueries({ queryKey: namespacesQuery.queryKey })
}

/** Creates a namespace. */
export function useCreateNamespace() {
  const onSuccess = useInvalidate()
  return useMutation({ mutationFn: (ns: Namespace) => createNamespace(ns), onSuccess })
}

/**
 * Updates a namespace, carrying the version it read. A refusal refreshes the
 * list too: a conflict means it changed.
 */
export function useUpdateNamespace() {
  const onSettled = useInvalidate()
  return useMutation({ mutationFn: (ns: Namespace) => updateNamespace(ns), onSettled })
}
