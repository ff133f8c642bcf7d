import type { Failure, HistoryEvent, PendingStep } from '../../api/types'
import { failureText } from '../../components/FailureView'
import { formatNanos } from '../../components/timeFormat'

/** How a bar of the chart ended (or that it has not), as the legend lists them. */
export const barStatuses = [
  'completed',
  'failed',
  'timed_out',
  'canceled',
  'scheduled',
  'running',
  'backoff',
  'timer',
  'signal',
] as const

/** How a bar of the chart ended (or that it has not). */
export type BarStatus = (typeof barStatuses)[number]

/** A row of the chart: one step, timer or child workflow, by its seq; or the run's signals. */
export interface GanttRow {
  seq: number
  kind: 'step' | 'timer' | 'child' | 'signal'
  label: string
}

/**
 * One bar: a step attempt, a timer, or a child's run; or a signal's
 * arrival, a mark at one time (start = end), labelled with its name. Times
 * are ms since the epoch.
 */
export interface GanttBar {
  row: number
  start: number
  end: number
  status: BarStatus
  /** "attempt 2", "fired", ... */
  label: string
  /** The failure message, when the bar failed. */
  detail?: string
  /** Not ended yet: the bar runs to now. */
  open: boolean
}

/** A Gantt chart of a run's work. */
export interface Gantt {
  rows: GanttRow[]
  bars: GanttBar[]
}

interface Open {
  row: number
  start: number
  attempt: number
}

/**
 * Lays out a run's steps, timers and children from its history. History
 * records when a step was scheduled and how each attempt ended (not when an
 * attempt started), so an attempt's bar runs from the end of the one before
 * (or the schedule) to its own end, the retry backoff included. A step,
 * timer or child still open runs to end (the run's close, or now); the
 * describe response says whether an open step waits for a worker
 * (scheduled), runs (started) or waits to be retried (backoff).
 */
export function buildGantt(events: HistoryEvent[], pending: PendingStep[], end: number): Gantt {
  const rows: GanttRow[] = []
  const bars: GanttBar[] = []
  const rowOf = new Map<string, number>()
  const steps = new Map<number, Open>()
  const timers = new Map<number, Open>()
  const children = new Map<number, Open>()

  const row = (kind: GanttRow['kind'], seq: number, label: string) => {
    const key = `${kind}:${seq}`
    let i = rowOf.get(key)
    if (i === undefined) {
      i = rows.push({ seq, kind, label }) - 1
      rowOf.set(key, i)
    }
    return i
  }
  const close = (open: Map<number, Open>, e: HistoryEvent, status: BarStatus, label: string, failure?: Failure) => {
    const o = open.get(e.seq ?? 0)
    if (!o) return
    open.delete(e.seq ?? 0)
    bars.push({
      row: o.row,
      start: o.start,
      end: Date.parse(e.time),
      status,
      label,
      detail: failureText(failure),
      open: false,
    })
  }

  // The signals' row comes first, when the run received any.
  if (events.some((e) => e.type === 'SignalReceived')) row('signal', 0, 'Signals')
  for (const e of events) {
    const t = Date.parse(e.time)
    const seq = e.seq ?? 0
    switch (e.type) {
      case 'SignalReceived':
        bars.push({ row: row('signal', 0, 'Signals'), start: t, end: t, status: 'signal', label: e.name ?? 'signal', open: false })
        break
      case 'StepScheduled':
        steps.set(seq, { row: row('step', seq, `${e.name ?? 'step'} #${seq}`), start: t, attempt: 1 })
        break
      case 'StepAttemptFailed': {
        const o = steps.get(seq)
        if (!o) break
        const attempt = e.attempt ?? o.attempt
        bars.push({
          row: o.row,
          start: o.start,
          end: t,
          status: 'failed',
          label: `attempt ${attempt}, retried`,
          detail: failureText(e.failure),
          open: false,
        })
        steps.set(seq, { row: o.row, start: t, attempt: attempt + 1 })
        break
      }
      case 'StepCompleted':
        close(steps, e, 'completed', `attempt ${e.attempt ?? steps.get(seq)?.attempt ?? 1}`)
        break
      case 'StepFailed':
        close(steps, e, 'failed', `attempt ${e.attempt ?? steps.get(seq)?.attempt ?? 1}, failed`, e.failure)
        break
      case 'StepTimedOut':
        close(steps, e, 'timed_out', `attempt ${e.attempt ?? steps.get(seq)?.attempt ?? 1}, timed out`, e.failure)
        break
      case 'StepCanceled':
        close(steps, e, 'canceled', 'canceled', e.failure)
        break
      case 'TimerStarted': {
        const label = e.timer ? `timer #${seq} (${formatNanos(e.timer.duration)})` : `timer #${seq}`
        timers.set(seq, { row: row('timer', seq, label), start: t, attempt: 0 })
        break
      }
      case 'TimerFired':
        close(timers, e, 'timer', 'fired')
        break
      case 'TimerCanceled':
        close(timers, e, 'canceled', 'canceled')
        break
      case 'ChildInitiated': {
        const id = e.child?.options.workflow_id
        const label = `child ${e.name ?? ''}${id ? ` ${id}` : ''} #${seq}`
        children.set(seq, { row: row('child', seq, label), start: t, attempt: 0 })
        break
      }
      case 'ChildStartFailed':
        close(children, e, 'failed', 'start failed', e.failure)
        break
      case 'ChildClosed':
        close(children, e, childStatus(e.child?.status), e.child?.status?.replaceAll('_', ' ') ?? 'closed', e.failure)
        break
    }
  }

  const states = new Map(pending.map((p) => [p.seq, p]))
  for (const [seq, o] of steps) {
    const p = states.get(seq)
    bars.push({
      row: o.row,
      start: o.start,
      end: Math.max(end, o.start),
      status: p?.state === 'backoff' ? 'backoff' : p?.state === 'scheduled' ? 'scheduled' : 'running',
      label: `attempt ${p?.attempt ?? o.attempt}, ${p?.state ?? 'running'}`,
      detail: p?.last_failure,
      open: true,
    })
  }
  for (const o of timers.values())
    bars.push({
      row: o.row,
      start: o.start,
      end: Math.max(end, o.start),
      status: 'timer',
      label: 'waiting',
      open: true,
    })
  for (const o of children.values())
    bars.push({
      row: o.row,
      start: o.start,
      end: Math.max(end, o.start),
      status: 'running',
      label: 'running',
      open: true,
    })
  return { rows, bars }
}

function childStatus(s: string | undefined): BarStatus {
  switch (s) {
    case 'completed':
    case 'continued_as_new':
      return 'completed'
    case 'canceled':
      return 'canceled'
    case 'timed_out':
      return 'timed_out'
    default:
      return 'failed'
  }
}
