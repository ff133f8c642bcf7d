import { request } from './client'

// The audit log: every change made through the API, who made it, from
// where, and how the server answered (server.AuditEntry). Cluster admins
// read every namespace's entries; a namespace's admins read that
// namespace's, one namespace at a time.

/** An entry of the audit log. */
export interface AuditEntry {
  id: string
  time: string
  /** The namespace the route named (absent for the routes of none: login, users, nodes). */
  namespace?: string
  /** The caller's name, "(unauthenticated)", or "NAME (service)" for a service account. */
  actor: string
  /** The address the request came from. */
  remote?: string
  /** The route: "POST /namespaces/{namespace}/workflows/{workflow_id}/terminate". */
  action: string
  /** What the path named: a workflow, schedule, batch, user. */
  target?: string
  run_id?: string
  /** The HTTP status the server answered with. */
  status: number
  /** The request's query and body (secrets removed), or their size. */
  detail?: unknown
}

/** A page of the audit log, newest first. */
export interface AuditList {
  entries: AuditEntry[]
  next_page_token?: string
}

/** The filter of the audit log. Times are RFC 3339; since is inclusive, until exclusive. */
export interface AuditFilter {
  /** Absent: every namespace (a cluster admin's). */
  namespace?: string
  actor?: string
  since?: string
  until?: string
}

/** GET /audit: a page of the audit log, newest first. */
export function listAudit(
  filter: AuditFilter,
  pageSize: number,
  pageToken: string | undefined,
  signal?: AbortSignal,
): Promise<AuditList> {
  return request('GET', '/audit', {
    query: { ...filter, page_size: String(pageSize), page_token: pageToken },
    signal,
  })
}
