import type { DagState } from '../api/dags'
import { dagStateLabel, dagTone } from './dagStates'

/** A DAG instance's or task's state as a coloured label; data-state holds the state's name. */
export function DagStateBadge({ state }: { state: DagState | undefined }) {
  if (!state) return <span className="badge dag-badge-none">Not started</span>
  return (
    <span className={`badge dag-badge-${dagTone(state)}`} data-state={state}>
      {dagStateLabel(state)}
    </span>
  )
}
