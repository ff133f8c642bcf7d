import { defaultNamespace } from '../../api/namespaces'

/**
 * The search parameters of the DAG pages. Definitions are not a
 * namespace's, their instances are: namespace says where the pages list
 * and start them (absent: the default namespace).
 */
export interface DagsSearch {
  namespace?: string
}

/** Reads the search parameters, dropping any that are not valid. */
export function validateDagsSearch(raw: Record<string, unknown>): DagsSearch {
  const ns = typeof raw.namespace === 'string' ? raw.namespace.trim() : ''
  return ns && ns !== defaultNamespace ? { namespace: ns } : {}
}

/** The search that names a namespace: empty for the default one. */
export function namespaceSearch(namespace: string): DagsSearch {
  return namespace && namespace !== defaultNamespace ? { namespace } : {}
}
