// How the console draws state machines' state kinds and instance statuses.
import type { SmKind, SmStatus } from '../api/statemachines'

const kindLabels: Record<SmKind, string> = {
  start: 'Start',
  normal: 'Normal',
  wait: 'Wait',
  manual: 'Manual',
  end: 'End',
  error: 'Error',
}

/** "manual" → "Manual". */
export function smKindLabel(kind: string): string {
  return kindLabels[kind as SmKind] ?? kind
}

/** The legend of the graph: each kind as its nodes are drawn. */
export const smKinds: SmKind[] = ['start', 'normal', 'wait', 'manual', 'end', 'error']

const statusLabels: Record<SmStatus, string> = {
  created: 'Created',
  inProgress: 'In progress',
  executing: 'Executing',
  manual: 'Manual',
  finished: 'Finished',
}

/** "inProgress" → "In progress". */
export function smStatusLabel(status: string): string {
  return statusLabels[status as SmStatus] ?? status
}

/** An instance's status as a badge, coloured as the runs' statuses are. */
export const smStatusTone: Record<SmStatus, string> = {
  created: 'scheduled',
  inProgress: 'running',
  executing: 'running',
  manual: 'paused',
  finished: 'completed',
}
