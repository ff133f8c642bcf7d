import type { BatchDescription } from '../../api/types'
import { StatusBadge } from '../../components/StatusBadge'

/** A batch's state as a colored label, as a run's status is drawn. */
export function BatchState({ state }: { state: string }) {
  return <StatusBadge status={state} />
}

/** "3 done: 3 succeeded, 0 failed": a batch's counts in words. */
export function progressText(b: Pick<BatchDescription, 'done' | 'succeeded' | 'failed'>): string {
  return `${b.done.toLocaleString()} done: ${b.succeeded.toLocaleString()} succeeded, ${b.failed.toLocaleString()} failed`
}
