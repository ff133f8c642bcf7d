import type { BatchOperation, ListRequest } from '../../api/types'
import { statusLabel } from '../../components/StatusBadge'

/** Each operation as a verb: "Terminate 3 runs". */
export const operationLabels: Record<BatchOperation, string> = {
  signal: 'Signal',
  cancel: 'Cancel',
  terminate: 'Terminate',
  reset: 'Reset',
  pause: 'Pause',
  resume: 'Resume',
}

/** The operations that change or end what a run does, drawn as destructive. */
export const destructive: ReadonlySet<BatchOperation> = new Set(['cancel', 'terminate', 'reset'])

/**
 * "type Approval, workflow id starting batch-, status Running": a filter
 * in words ('' when it has none).
 */
export function describeFilter(f: ListRequest): string {
  const parts: string[] = []
  if (f.workflow_type) parts.push(`type ${f.workflow_type}`)
  if (f.workflow_id) parts.push(`workflow id ${f.workflow_id}`)
  if (f.workflow_id_prefix) parts.push(`workflow id starting ${f.workflow_id_prefix}`)
  if (f.business_key) parts.push(`business key ${f.business_key}`)
  if (f.business_key_prefix) parts.push(`business key starting ${f.business_key_prefix}`)
  if (f.statuses?.length) parts.push(`status ${f.statuses.map(statusLabel).join(' or ')}`)
  if (f.started_after) parts.push(`started after ${f.started_after}`)
  if (f.started_before) parts.push(`started before ${f.started_before}`)
  for (const [k, v] of Object.entries(f.attributes ?? {})) parts.push(`${k}=${v}`)
  return parts.join(', ')
}

/** "1 run", "3 runs". */
export function runsText(n: number): string {
  return `${n.toLocaleString()} run${n === 1 ? '' : 's'}`
}
