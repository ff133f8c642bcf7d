import { request } from './client'
import type { NamespaceList } from './types'

/** GET /namespaces: every namespace. */
export function listNamespaces(signal?: AbortSignal): Promise<NamespaceList> {
  return request('GET', '/namespaces', { signal })
}

/** The namespace a request naming none uses (api.DefaultNamespace). */
export const defaultNamespace = 'default'
