import { lazy, Suspense, useMemo } from 'react'
import type { SagaRecord, TryoutOutcome } from '../../api/sagas'
import { parseTime } from '../../components/timeFormat'
import type { BarStatus, Gantt } from '../run/gantt'

// ECharts is loaded with the first chart, not with the console.
const GanttChart = lazy(() => import('../run/GanttChart'))

const barOf: Record<TryoutOutcome, BarStatus> = {
  succeeded: 'completed',
  retrying: 'failed',
  failed: 'failed',
  timed_out: 'timed_out',
  canceled: 'canceled',
  running: 'running',
}

/** The legend: the bars' colours as the saga's words. */
const legend: { status: BarStatus; label: string }[] = [
  { status: 'completed', label: 'Succeeded' },
  { status: 'failed', label: 'Failed' },
  { status: 'timed_out', label: 'Timed out' },
  { status: 'canceled', label: 'Canceled' },
  { status: 'running', label: 'Running' },
  { status: 'backoff', label: 'Waiting to retry' },
]

/**
 * The tryouts on a time line (the run page's Gantt chart): a row per
 * forward step and per compensation, a bar per attempt from when a worker
 * took it to its end, and the wait before a retry between two attempts.
 */
export function buildSagaGantt(saga: SagaRecord, now: number): Gantt {
  const rows: Gantt['rows'] = []
  const bars: Gantt['bars'] = []
  const rowOf = new Map<string, number>()
  const lastEnd = new Map<number, number>()
  // Attempts in their order per row, whatever order the tryouts ended in.
  const tryouts = [...saga.tryouts].sort((a, b) => a.attempt - b.attempt)
  for (const key of saga.tryouts.map((t) => `${t.step}\u0000${t.phase}`)) {
    if (rowOf.has(key)) continue
    const [step, phase] = key.split('\u0000')
    rowOf.set(
      key,
      rows.push({ seq: rows.length, kind: 'step', label: phase === 'compensation' ? `${step} ↩ undo` : `${step}` }) - 1,
    )
  }
  for (const t of tryouts) {
    const row = rowOf.get(`${t.step}\u0000${t.phase}`)!
    const ended = parseTime(t.ended)?.getTime()
    const start = parseTime(t.started)?.getTime() ?? ended
    if (start === undefined) continue
    const before = lastEnd.get(row)
    if (before !== undefined && start > before) {
      bars.push({
        row,
        start: before,
        end: start,
        status: 'backoff',
        label: `before attempt ${t.attempt}`,
        open: false,
      })
    }
    const end = ended ?? Math.max(now, start)
    lastEnd.set(row, end)
    bars.push({
      row,
      start,
      end: Math.max(end, start + 1),
      status: barOf[t.outcome] ?? 'completed',
      label: `${t.phase} attempt ${t.attempt}: ${t.outcome.replaceAll('_', ' ')}`,
      ...(t.error ? { detail: t.error } : {}),
      open: ended === undefined,
    })
  }
  return { rows, bars }
}

/** The timeline of the tryouts, with its legend. */
export function SagaTimeline({ saga, now }: { saga: SagaRecord; now: number }) {
  const gantt = useMemo(() => buildSagaGantt(saga, now), [saga, now])
  if (gantt.bars.length === 0) return null
  return (
    <section className="card" aria-labelledby="timeline-title">
      <div className="card-header">
        <h2 id="timeline-title">Timeline</h2>
        <ul className="legend" aria-label="Legend">
          {legend.map((l) => (
            <li key={l.status} className={`legend-${l.status}`}>
              {l.label}
            </li>
          ))}
        </ul>
      </div>
      <Suspense fallback={<p className="muted">Loading the chart…</p>}>
        <GanttChart
          gantt={gantt}
          label={`Timeline of the ${saga.tryouts.length} tryouts: a row per forward step and compensation, a bar per attempt. The tryouts table above lists the same times.`}
        />
      </Suspense>
    </section>
  )
}
