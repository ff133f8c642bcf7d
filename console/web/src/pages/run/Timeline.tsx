import { lazy, Suspense } from 'react'
import { StatusBadge, statusLabel } from '../../components/StatusBadge'
import { formatDuration, formatTime } from '../../components/timeFormat'
import { barStatuses, type Gantt } from './gantt'

// ECharts is loaded with the first chart, not with the console.
const GanttChart = lazy(() => import('./GanttChart'))

/** The Gantt chart of the run's work, with the same bars as a table. */
export function Timeline({ gantt }: { gantt: Gantt }) {
  if (gantt.rows.length === 0) return null
  return (
    <section className="card" aria-labelledby="timeline-title">
      <div className="card-header">
        <h2 id="timeline-title">Timeline</h2>
        <ul className="legend" aria-label="Legend">
          {barStatuses.map((s) => (
            <li key={s} className={`legend-${s}`}>
              {statusLabel(s)}
            </li>
          ))}
        </ul>
      </div>
      <Suspense fallback={<p className="muted">Loading the chart…</p>}>
        <GanttChart gantt={gantt} />
      </Suspense>
      <details className="bars-table">
        <summary>The bars as a table</summary>
        <div className="table-wrap">
          <table className="table compact">
            <thead>
              <tr>
                <th scope="col">What</th>
                <th scope="col">Bar</th>
                <th scope="col">Status</th>
                <th scope="col">From</th>
                <th scope="col">Took</th>
                <th scope="col">Failure</th>
              </tr>
            </thead>
            <tbody>
              {gantt.bars.map((b, i) => (
                <tr key={i}>
                  <td>{gantt.rows[b.row]?.label}</td>
                  <td>{b.label}</td>
                  <td>
                    <StatusBadge status={b.status} />
                  </td>
                  <td>{formatTime(new Date(b.start), true)}</td>
                  <td className="num">
                    {b.status === 'signal' ? '—' : formatDuration(b.end - b.start)}
                    {b.open && ' so far'}
                  </td>
                  <td className="wrap">{b.detail ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </section>
  )
}
