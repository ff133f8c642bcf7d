import { path, request } from './client'
import type { Namespace, NamespaceList } from './types'

/** GET /namespaces: every namespace. */
export function listNamespaces(signal?: AbortSignal): Promise<NamespaceList> {
  return request('GET', '/namespaces', { signal })
}

/** POST /namespaces: creates a namespace (already_exists when the name is taken). */
export function createNamespace(ns: Namespace): Promise<Namespace> {
  return request('POST', '/namespaces', { body: ns })
}

/**
 * PUT /namespaces/{name}: replaces the description, retention and data of a
 * namespace. ns.version must be the version read (conflict otherwise); a
 * retention of 0 keeps the current one.
 */
export function updateNamespace(ns: Namespace): Promise<Namespace> {
  return request('PUT', path`/namespaces/${ns.name}`, { body: ns })
}

/** The namespace a request naming none uses (api.DefaultNamespace). */
export const defaultNamespace = 'default'
