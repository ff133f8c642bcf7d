import { lazy, Suspense, useMemo } from 'react'
import type { DagTaskInstance } from '../../api/dags'
import { dagStateLabel, dagTone, type DagTone } from '../../components/dagStates'
import type { BarStatus, Gantt } from '../run/gantt'
import { Time } from '../../components/Time'
import { formatDuration } from '../../components/timeFormat'

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

/** A bar of the timeline: an attempt of a task (or, for a task without attempts, its one run). */
interface AttemptBar {
  task: string
  attempt: number
  state: DagTaskInstance['state']
  start: number
  end: number
  error?: string
}

/** The attempts of the tasks that started, each a bar from its start to its end (or to now). */
function attemptBars(tasks: DagTaskInstance[]): AttemptBar[] {
  return tasks.flatMap((t) =>
    t.attempts?.length
      ? t.attempts.map((a) => ({
          task: t.name,
          attempt: a.attempt,
          state: a.state,
          start: Date.parse(a.start_time ?? ''),
          end: Date.parse(a.end_time ?? ''),
          error: a.error,
        }))
      : [
          {
            task: t.name,
            attempt: t.attempt ?? 0,
            state: t.state,
            start: Date.parse(t.start_time ?? ''),
            end: Date.parse(t.end_time ?? ''),
            error: t.error,
          },
        ],
  )
}

/** The tasks that started, a row each in the order they started, with a bar per attempt (failed ones red). */
export function taskGantt(tasks: DagTaskInstance[], now: number): Gantt {
  const started = tasks
    .map((t) => ({ t, start: Date.parse(t.attempts?.[0]?.start_time ?? t.start_time ?? '') }))
    .filter(({ start }) => !Number.isNaN(start))
    .sort((a, b) => a.start - b.start)
  const rowOf = new Map(started.map(({ t }, i) => [t.name, i]))
  const bars = attemptBars(started.map(({ t }) => t)).filter((b) => !Number.isNaN(b.start))
  return {
    rows: started.map(({ t }, i) => ({ seq: i, kind: 'step', label: t.name })),
    bars: bars.map((b) => {
      const open = Number.isNaN(b.end)
      const bar = {
        row: rowOf.get(b.task) ?? 0,
        start: b.start,
        end: open ? Math.max(now, b.start) : b.end,
        status: barOf[dagTone(b.state)],
        label: `${b.attempt > 0 ? `attempt ${b.attempt}: ` : ''}${dagStateLabel(b.state)}`,
        open,
      }
      return b.error ? { ...bar, detail: b.error } : bar
    }),
  }
}

/** The Gantt chart of an instance's tasks: when each attempt started and ended. */
export function InstanceTimeline({ tasks, now }: { tasks: DagTaskInstance[]; now: number }) {
  const gantt = useMemo(() => taskGantt(tasks, now), [tasks, now])
  const bars = useMemo(() => attemptBars(tasks).filter((b) => !Number.isNaN(b.start)), [tasks])
  if (gantt.rows.length === 0) return null
  return (
    <section className="card" aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      <Suspense fallback={<p className="muted">Loading the chart…</p>}>
        <GanttChart
          gantt={gantt}
          label={`Timeline of the ${gantt.rows.length} tasks that ran, ${gantt.bars.length} attempts: when each attempt started and ended. The table of attempts below lists them.`}
        />
      </Suspense>
      <details className="timeline-attempts">
        <summary>The attempts ({bars.length})</summary>
        <table className="table compact">
          <thead>
            <tr>
              <th scope="col">Task</th>
              <th scope="col">Attempt</th>
              <th scope="col">Outcome</th>
              <th scope="col">Started</th>
              <th scope="col">Took</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {bars.map((b) => (
              <tr key={`${b.task}-${b.attempt}`} data-task={b.task} data-attempt={b.attempt} data-state={b.state}>
                <td>{b.task}</td>
                <td className="num">{b.attempt || '—'}</td>
                <td>{dagStateLabel(b.state)}</td>
                <td>
                  <Time value={new Date(b.start).toISOString()} millis />
                </td>
                <td>{Number.isNaN(b.end) ? 'running' : formatDuration(b.end - b.start)}</td>
                <td>{b.error ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </section>
  )
}
