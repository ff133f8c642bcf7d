import type { SmStatus } from '../api/statemachines'
import { smStatusLabel, smStatusTone } from './smKinds'

/** A state machine instance's status as a coloured label. */
export function SmStatusBadge({ status }: { status: string }) {
  const tone = smStatusTone[status as SmStatus] ?? 'scheduled'
  return (
    <span className={`badge status-${tone}`} data-status={status}>
      {smStatusLabel(status)}
    </span>
  )
}
