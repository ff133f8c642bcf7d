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
  /** Closed at or after (RFC 3339). */
  closedAfter?: string
  /** Closed before (RFC 3339). */
  closedBefore?: string
  /** An attribute the runs have, as name=value. */
  attr?: string
  /** Strand's own runs are listed too (they are left out otherwise). */
  system?: boolean
  /** Oldest start first (newest first otherwise). */
  sort?: 'oldest'
  /** Runs per page. */
  size?: number
  /** The page shown, from 1. */
  page?: number
}

/** The page sizes offered. */
export const pageSizes = [25, 50, 100, 200] as const

/** The page size when the URL names none. */
export const defaultPageSize = 50

/**
 * The workflow types of Strand's own runs (api.SystemWorkflowTypes):
 * schedules, batch operations, mailboxes and human tasks. The runs list
 * leaves them out unless asked.
 */
export const systemWorkflowTypes = ['strand.Schedule', 'strand.Batch', 'strand.Mailbox', 'strand.HumanTask']

const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined)

const time = (v: unknown) => {
  const s = text(v)
  return s !== undefined && !Number.isNaN(Date.parse(s)) ? s : undefined
}

/** Splits name=value at its first '=': undefined without a name. */
export function parseAttr(s: string | undefined): [string, string] | undefined {
  if (!s) return undefined
  const i = s.indexOf('=')
  if (i <= 0) return undefined
  return [s.slice(0, i).trim(), s.slice(i + 1).trim()]
}

/** Reads the search parameters, dropping any that are not valid. */
export function validateRunsSearch(raw: Record<string, unknown>): RunsSearch {
  const status = runStatuses.find((s) => s === raw.status)
  const size = pageSizes.find((n) => n === Number(raw.size))
  const page = Number(raw.page)
  const out: RunsSearch = {}
  if (status) out.status = status
  const attr = text(raw.attr)
  const fields = {
    type: text(raw.type),
    id: text(raw.id),
    key: text(raw.key),
    after: time(raw.after),
    before: time(raw.before),
    closedAfter: time(raw.closedAfter),
    closedBefore: time(raw.closedBefore),
    attr: parseAttr(attr) ? attr : undefined,
  }
  for (const [k, v] of Object.entries(fields)) {
    if (v !== undefined) out[k as keyof typeof fields] = v
  }
  if (raw.system === true || raw.system === 'true' || raw.system === 1 || raw.system === '1') out.system = true
  if (raw.sort === 'oldest') out.sort = 'oldest'
  if (size && size !== defaultPageSize) out.size = size
  if (Number.isInteger(page) && page > 1) out.page = page
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
  if (s.closedAfter) f.closed_after = s.closedAfter
  if (s.closedBefore) f.closed_before = s.closedBefore
  const attr = parseAttr(s.attr)
  if (attr) f.attributes = { [attr[0]]: attr[1] }
  // Strand's own runs are left out unless asked for, or named by type.
  if (!s.system && !s.type) f.exclude_workflow_types = systemWorkflowTypes
  return f
}
