// The resource centre of DAG pipelines (server/resources.go): files tasks
// fetch, in versions, and the data sources sql tasks name. Read-only here:
// the CLI (strand resource, strand datasource) makes and changes them.
import { request } from './client'

/** One upload of a resource. */
export interface ResourceVersion {
  version: number
  size: number
  sha256: string
  uploaded_at: string
  uploaded_by?: string
}

/** A file of the resource centre, with its versions. */
export interface Resource {
  name: string
  owner: string
  users?: string[]
  versions: ResourceVersion[]
  created_at: string
}

/** A data source as the server shows it: never its password. */
export interface DataSource {
  name: string
  type: string
  url: string
  description?: string
  has_password?: boolean
  owner: string
  users?: string[]
  modified_at: string
}

/** GET /resources: the resources the caller may use, and the size limit. */
export function listResources(signal?: AbortSignal): Promise<{ resources: Resource[]; max_size: number }> {
  return request('GET', '/resources', { signal })
}

/** GET /datasources: the data sources the caller may use. */
export function listDataSources(signal?: AbortSignal): Promise<{ datasources: DataSource[] }> {
  return request('GET', '/datasources', { signal })
}
