// The states of sagas, of their steps' phases and of their tryouts as
// coloured labels, in the run statuses' colours (StatusBadge's classes):
// data-state holds the state's name.
import type { PhaseState, SagaState, TryoutOutcome } from '../../api/sagas'
import { statusLabel } from '../../components/StatusBadge'

/** The status class each saga state is drawn with (absent: neutral). */
const sagaTones: Partial<Record<SagaState, string>> = {
  started: 'started',
  in_progress: 'running',
  completed: 'completed',
  failed: 'failed',
  compensating: 'backoff',
  compensated: 'timer',
  compensation_failed: 'failed',
  disabled: 'paused',
  terminated: 'terminated',
}

/** A saga's state as a coloured label. */
export function SagaStateBadge({ state }: { state: string | undefined }) {
  if (!state) return <span className="badge">Unknown</span>
  const tone = sagaTones[state as SagaState]
  return (
    <span className={tone ? `badge status-${tone}` : 'badge'} data-state={state}>
      {statusLabel(state)}
    </span>
  )
}

const phaseTones: Partial<Record<PhaseState, string>> = {
  running: 'running',
  retrying: 'backoff',
  completed: 'completed',
  failed: 'failed',
  done: 'timer',
}

const phaseLabels: Partial<Record<PhaseState, string>> = { none: 'Not run', done: 'Done by hand' }

/** A forward step's or compensation's state as a coloured label. */
export function PhaseBadge({ state }: { state: PhaseState }) {
  const tone = phaseTones[state]
  return (
    <span className={tone ? `badge status-${tone}` : 'badge'} data-state={state}>
      {phaseLabels[state] ?? statusLabel(state)}
    </span>
  )
}

const outcomeTones: Record<TryoutOutcome, string> = {
  succeeded: 'completed',
  retrying: 'backoff',
  failed: 'failed',
  timed_out: 'timed_out',
  canceled: 'canceled',
  running: 'running',
}

const outcomeLabels: Partial<Record<TryoutOutcome, string>> = { retrying: 'Failed, retried' }

/**
 * How a tryout ended as a coloured label; waiting: a tryout not ended that
 * no worker has taken yet (it waits for one, or for its retry's back-off).
 */
export function OutcomeBadge({ outcome, waiting = false }: { outcome: TryoutOutcome; waiting?: boolean }) {
  if (waiting) {
    return (
      <span className="badge" data-outcome={outcome}>
        Waiting
      </span>
    )
  }
  return (
    <span className={`badge status-${outcomeTones[outcome] ?? 'canceled'}`} data-outcome={outcome}>
      {outcomeLabels[outcome] ?? statusLabel(outcome)}
    </span>
  )
}
