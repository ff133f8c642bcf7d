import { lazy, Suspense, useMemo } from 'react'
import type { DagTaskInstance } from '../../api/dags'
import { dagStateLabel, dagTone, type DagTone } from '../../components/dagStates'
import type { BarStatus, Gantt } from '../run/gantt'

// ECharts is loaded with the first chart, not with the console.
const GanttChart = lazy(() => import('../run/GanttChart'))

/** The chart's bar colour of each tone: the same CSS variables as the graph's (dagStates' toneColors). */
const barOf: Record<DagTone, BarStatus> = {
  ok: 'completed', // --ok
  bad: 'failed', // --bad
  running: 'running', // --info
  waiting: 'scheduled', // --neutral-soft
  paused: 'timed_out', // --warn
  stopped: 'timer', // --timer
  off: 'canceled', // --neutral
  none: 'scheduled',
}

/** The tasks that started, a bar each from start to end (or to now), in the order they started. */
export function taskGantt(tasks: DagTaskInstance[], now: number): Gantt {
  const started = tasks
    .map((t) => ({ t, start: Date.parse(t.start_time ?? '') }))
    .filter(({ start }) => !Number.isNaN(start))
    .sort((a, b) => a.start - b.start)
  return {
    rows: started.map(({ t }, i) => ({ seq: i, kind: 'step', label: t.name })),
    bars: started.map(({ t, start }, row) => {
      const end = Date.parse(t.end_time ?? '')
      const open = Number.isNaN(end)
      const bar = {
        row,
        start,
        end: open ? Math.max(now, start) : end,
        status: barOf[dagTone(t.state)],
        label: `${dagStateLabel(t.state)}${(t.attempt ?? 0) > 1 ? `, attempt ${t.attempt}` : ''}`,
        open,
      }
      return t.error ? { ...bar, detail: t.error } : bar
    }),
  }
}

/** The Gantt chart of an instance's tasks: when each started and ended. */
export function InstanceTimeline({ tasks, now }: { tasks: DagTaskInstance[]; now: number }) {
  const gantt = useMemo(() => taskGantt(tasks, now), [tasks, now])
  if (gantt.rows.length === 0) return null
  return (
    <section className="card" aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      <Suspense fallback={<p className="muted">Loading the chart…</p>}>
        <GanttChart
          gantt={gantt}
          label={`Timeline of the ${gantt.rows.length} tasks that ran: when each started and ended. The tasks table above lists the same times.`}
        />
      </Suspense>
    </section>
  )
}
