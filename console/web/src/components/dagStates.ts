// How the console draws the states of DAG instances and their tasks
// (DolphinScheduler's names): each state has a tone, a colour the graph, the
// badges and the Gantt chart share.
import type { DagState } from '../api/dags'

/** The colours of states: a task's node, badge and bar are drawn in its state's tone. */
export type DagTone = 'ok' | 'bad' | 'running' | 'waiting' | 'paused' | 'stopped' | 'off' | 'none'

const tones: Record<DagState, DagTone> = {
  success: 'ok',
  failure: 'bad',
  kill: 'bad',
  need_fault_tolerance: 'paused',
  running: 'running',
  submitted: 'waiting',
  waiting_thread: 'waiting',
  waiting_dependency: 'waiting',
  ready_pause: 'paused',
  paused: 'paused',
  ready_stop: 'stopped',
  stop: 'stopped',
  forbidden: 'off',
  skipped: 'off',
  not_run: 'off',
}

/** The tone of a state; 'none' for a task that has no state yet. */
export function dagTone(state: DagState | undefined): DagTone {
  return (state && tones[state]) || 'none'
}

/** The CSS variable each tone is drawn with (the solid colour: a node's edge, a bar). */
export const toneColors: Record<DagTone, string> = {
  ok: '--ok',
  bad: '--bad',
  running: '--info',
  waiting: '--neutral-soft',
  paused: '--warn',
  stopped: '--timer',
  off: '--neutral',
  none: '--border',
}

/** The legend: each tone with the states it stands for. */
export const dagLegend: { tone: DagTone; label: string }[] = [
  { tone: 'ok', label: 'Success' },
  { tone: 'bad', label: 'Failure, kill' },
  { tone: 'running', label: 'Running' },
  { tone: 'waiting', label: 'Submitted, waiting' },
  { tone: 'paused', label: 'Pausing, paused' },
  { tone: 'stopped', label: 'Stopping, stopped' },
  { tone: 'off', label: 'Forbidden, skipped, not run' },
  { tone: 'none', label: 'Not started' },
]

/** "ready_pause" → "Ready pause", "stop" → "Stopped"; no state (a task not reached) → "Not started". */
export function dagStateLabel(state: string | undefined): string {
  if (!state) return 'Not started'
  if (state === 'stop') return 'Stopped'
  if (state === 'kill') return 'Killed'
  if (state === 'not_run') return 'Not run'
  if (state === 'need_fault_tolerance') return 'Needs fault tolerance'
  const s = state.replaceAll('_', ' ')
  return s.charAt(0).toUpperCase() + s.slice(1)
}

/** Whether an instance in this state still runs (its page refreshes). */
export function dagStateLive(state: DagState | undefined): boolean {
  return (
    state !== undefined && !['success', 'failure', 'stop', 'kill', 'forbidden', 'skipped', 'not_run'].includes(state)
  )
}
