import type { ListRequest, RunStatus } from '../../api/types'
import { runStatuses } from '../../api/types'

/** The runs page's filters, as its URL's search parameters hold them. */
export interface RunsSearch {
  status?: RunStatus
  /** Workflow type. */
  type?: string
  /** The start of the workflow ids shown. */
  id?: string
  /** The start of the business keys shown. */
  key?: string
  /** Started at or after (RFC 3339). */
  after?: string
  /** Started before (RFC 3339). */
  before?: string
  /** Runs per page. */
  size?: number
}

/** The page sizes offered. */
export const pageSizes = [25, 50, 100, 200] as const

/** The page size when the URL names none. */
export const defaultPageSize = 50

const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined)

const time = (v: unknown) => {
  const s = text(v)
  return s !== undefined && !Number.isNaN(Date.parse(s)) ? s : undefined
}

/** Reads the search parameters, dropping any that are not valid. */
export function validateRunsSearch(raw: Record<string, unknown>): RunsSearch {
  const status = runStatuses.find((s) => s === raw.status)
  const size = pageSizes.find((n) => n === Number(raw.size))
  const out: RunsSearch = {}
  if (status) out.status = status
  const fields = {
    type: text(raw.type),
    id: text(raw.id),
    key: text(raw.key),
    after: time(raw.after),
    before: time(raw.before),
  }
  for (const [k, v] of Object.entries(fields)) {
    if (v !== undefined) out[k as keyof typeof fields] = v
  }
  if (size && size !== defaultPageSize) out.size = size
  return out
}

/** The API filter of the search, without its status and paging. */
export function toFilter(s: RunsSearch): ListRequest {
  const f: ListRequest = {}
  if (s.type) f.workflow_type = s.type
  if (s.id) f.workflow_id_prefix = s.id
  if (s.key) f.business_key_prefix = s.key
  if (s.after) f.started_after = s.after
  if (s.before) f.started_before = s.before
  return f
}
