import { Link } from '@tanstack/react-router'
import type { TypeStats } from '../../api/types'
import { formatPercent } from '../../components/percent'
import { formatNanos } from '../../components/timeFormat'
import { failingTypes, slowestTypes, topTypes } from './overview'

interface TypesProps {
  namespace: string
  types: TypeStats[]
}

/** The workflow types whose closed runs took longest on average; each links to its runs. */
export function SlowestTypes({ namespace, types }: TypesProps) {
  const rows = slowestTypes(types)
  return (
    <section className="card" aria-labelledby="slowest-title">
      <div className="card-header">
        <h2 id="slowest-title">Slowest workflow types</h2>
        <span className="muted small">top {topTypes} by mean duration, start to close</span>
      </div>
      {rows.length === 0 ? (
        <p className="muted">No run closed in the last hour.</p>
      ) : (
        <div className="table-wrap">
          <table className="table compact">
            <thead>
              <tr>
                <th scope="col">Workflow type</th>
                <th scope="col" className="num">
                  Mean
                </th>
                <th scope="col" className="num">
                  Max
                </th>
                <th scope="col" className="num">
                  Closed
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((t) => (
                <tr key={t.workflow_type}>
                  <td>
                    <Link
                      to="/namespaces/$namespace/runs"
                      params={{ namespace }}
                      search={{ type: t.workflow_type }}
                      className="strong"
                    >
                      {t.workflow_type}
                      <span className="visually-hidden"> runs</span>
                    </Link>
                  </td>
                  <td className="num" title={`${t.mean_duration} ns`}>
                    {formatNanos(t.mean_duration)}
                  </td>
                  <td className="num" title={`${t.max_duration} ns`}>
                    {formatNanos(t.max_duration)}
                  </td>
                  <td className="num">{t.closed.toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

/** The workflow types with the most failed (or timed out) runs; each links to its failed runs. */
export function FailingTypes({ namespace, types }: TypesProps) {
  const rows = failingTypes(types)
  return (
    <section className="card" aria-labelledby="failing-title">
      <div className="card-header">
        <h2 id="failing-title">Most failing workflow types</h2>
        <span className="muted small">top {topTypes} by runs failed or timed out</span>
      </div>
      {rows.length === 0 ? (
        <p className="muted">No run failed or timed out in the last hour.</p>
      ) : (
        <div className="table-wrap">
          <table className="table compact">
            <thead>
              <tr>
                <th scope="col">Workflow type</th>
                <th scope="col" className="num">
                  Failed
                </th>
                <th scope="col" className="num">
                  Closed
                </th>
                <th scope="col" className="num">
                  Failure rate
                </th>
                <th scope="col">
                  <span className="visually-hidden">Share</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((t) => {
                const rate = t.closed > 0 ? t.failed / t.closed : 0
                return (
                  <tr key={t.workflow_type}>
                    <td>
                      <Link
                        to="/namespaces/$namespace/runs"
                        params={{ namespace }}
                        search={{ type: t.workflow_type, status: 'failed' }}
                        className="strong"
                      >
                        {t.workflow_type}
                        <span className="visually-hidden"> failed runs</span>
                      </Link>
                      <span className="muted small" aria-hidden="true">
                        {' '}
                        ·{' '}
                      </span>
                      <Link
                        to="/namespaces/$namespace/runs"
                        params={{ namespace }}
                        search={{ type: t.workflow_type, status: 'timed_out' }}
                        className="small"
                      >
                        timed out<span className="visually-hidden"> runs of {t.workflow_type}</span>
                      </Link>
                    </td>
                    <td className="num bad">{t.failed.toLocaleString()}</td>
                    <td className="num">{t.closed.toLocaleString()}</td>
                    <td className="num">{formatPercent(rate)}</td>
                    <td className="share">
                      <div className="bar bar-bad" aria-hidden="true">
                        <span style={{ width: `${100 * rate}%` }} />
                      </div>
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
      {rows.length > 0 && (
        <p className="muted small card-note">
          Failed counts the runs that failed or timed out: a type links to its failed runs, and “timed out” to those
          that timed out.
        </p>
      )}
    </section>
  )
}
