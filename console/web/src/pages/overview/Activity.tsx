import { lazy, Suspense, useMemo } from 'react'
import type { MinuteStats } from '../../api/types'
import { formatTime, zoneName } from '../../components/timeFormat'
import { chartSeries, minutePoints, type Totals } from './overview'

// ECharts is loaded with the first chart, not with the console.
const RunsChart = lazy(() => import('./RunsChart'))

interface ActivityProps {
  minutes: MinuteStats[]
  totals: Totals
  /** When counting started, if within the hour. */
  since: Date | undefined
}

/** The chart of the runs started, completed and failed per minute, with the minutes as a table. */
export function Activity({ minutes, totals, since }: ActivityProps) {
  const points = useMemo(() => minutePoints(minutes), [minutes])
  const failed = totals.failed + totals.timed_out
  return (
    <section className="card" aria-labelledby="activity-title">
      <div className="card-header">
        <h2 id="activity-title">Runs per minute</h2>
        <ul className="legend" aria-label="Legend">
          {chartSeries.map((s) => (
            <li key={s.key} className={`legend-${s.key}`}>
              {s.label}
            </li>
          ))}
          {since && <li className="legend-uncounted">Not counted</li>}
        </ul>
      </div>
      <Suspense fallback={<p className="muted">Loading the chart…</p>}>
        <RunsChart
          points={points}
          since={since}
          label={
            `Runs per minute over the last hour: ${totals.started} started, ${totals.completed} completed, ` +
            `${failed} failed or timed out; the table below lists the minutes.`
          }
        />
      </Suspense>
      <details className="bars-table">
        <summary>The minutes as a table</summary>
        <div className="table-wrap">
          <table className="table compact minutes-table">
            <caption className="visually-hidden">Runs started and closed per minute, the latest minute first</caption>
            <thead>
              <tr>
                <th scope="col">Minute ({zoneName()})</th>
                <th scope="col" className="num">
                  Started
                </th>
                <th scope="col" className="num">
                  Completed
                </th>
                <th scope="col" className="num">
                  Failed
                </th>
                <th scope="col" className="num">
                  Timed out
                </th>
                <th scope="col" className="num">
                  Canceled
                </th>
                <th scope="col" className="num">
                  Terminated
                </th>
                <th scope="col" className="num">
                  Continued as new
                </th>
              </tr>
            </thead>
            <tbody>
              {minutes.toReversed().map((m) => {
                // A minute over before counting started has no counts, not zeros.
                const counted = !since || Date.parse(m.time) + 60_000 > since.getTime()
                const n = (v: number) => (counted ? v : undefined)
                return (
                  <tr key={m.time}>
                    <th scope="row" className="minute">
                      <time dateTime={m.time}>{formatTime(new Date(m.time)).slice(0, 16)}</time>
                      {!counted && <span className="muted small"> not counted</span>}
                    </th>
                    <Count n={n(m.started)} />
                    <Count n={n(m.completed)} />
                    <Count n={n(m.failed)} />
                    <Count n={n(m.timed_out)} />
                    <Count n={n(m.canceled)} />
                    <Count n={n(m.terminated)} />
                    <Count n={n(m.continued_as_new)} />
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      </details>
    </section>
  )
}

/** A count, muted when zero; a dash when there is none. */
function Count({ n }: { n: number | undefined }) {
  return <td className={`num${!n ? ' muted' : ''}`}>{n === undefined ? '—' : n.toLocaleString()}</td>
}
