import type { AuditFilter } from '../../api/audit'
import { formatTime } from '../../components/timeFormat'

/**
 * The audit page's filters, as its URL's search parameters hold them. No
 * namespace: every namespace's entries for a cluster admin, the first
 * namespace they administer for anyone else.
 */
export interface AuditSearch {
  namespace?: string
  /** The caller, as the entries name them ("alice", "ci (service)"). */
  actor?: string
  /** Entries at or after (RFC 3339). */
  since?: string
  /** Entries before (RFC 3339). */
  until?: string
}

/** Entries per page. */
export const pageSize = 50

const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined)

const time = (v: unknown) => {
  const s = text(v)
  return s !== undefined && !Number.isNaN(Date.parse(s)) ? s : undefined
}

/** Reads the search parameters, dropping any that are not valid. */
export function validateAuditSearch(raw: Record<string, unknown>): AuditSearch {
  const fields = {
    namespace: text(raw.namespace),
    actor: text(raw.actor),
    since: time(raw.since),
    until: time(raw.until),
  }
  const out: AuditSearch = {}
  for (const [k, v] of Object.entries(fields)) {
    if (v !== undefined) out[k as keyof AuditSearch] = v
  }
  return out
}

/** The API filter of the search, in namespace (undefined: every namespace). */
export function toAuditFilter(s: AuditSearch, namespace: string | undefined): AuditFilter {
  const f: AuditFilter = {}
  if (namespace) f.namespace = namespace
  if (s.actor) f.actor = s.actor
  if (s.since) f.since = s.since
  if (s.until) f.until = s.until
  return f
}

/** "actor alice, since 2026-11-24 10:00": the filter in words, but its namespace ('' when it has none). */
export function describeAuditSearch(s: AuditSearch): string {
  const parts: string[] = []
  if (s.actor) parts.push(`actor ${s.actor}`)
  if (s.since) parts.push(`since ${formatTime(new Date(s.since))}`)
  if (s.until) parts.push(`until ${formatTime(new Date(s.until))}`)
  return parts.join(', ')
}
