import type { ReactNode } from 'react'
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
    <TypesCard
      id="slowest-title"
      title="Slowest workflow types"
      note={`top ${topTypes} by mean duration, start to close`}
      empty="No run closed in the last hour."
      columns={[
        { label: 'Mean', num: true },
        { label: 'Max', num: true },
        { label: 'Closed', num: true },
      ]}
    >
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
    </TypesCard>
  )
}

/** The workflow types with the most failed (or timed out) runs; each links to its failed runs. */
export function FailingTypes({ namespace, types }: TypesProps) {
  const rows = failingTypes(types)
  return (
    <TypesCard
      id="failing-title"
      title="Most failing workflow types"
      note={`top ${topTypes} by runs failed or timed out`}
      empty="No run failed or timed out in the last hour."
      columns={[
        { label: 'Failed', num: true },
        { label: 'Closed', num: true },
        { label: 'Failure rate', num: true },
        { label: 'Share', hidden: true },
      ]}
      footer={
        <p className="muted small card-note">
          Failed counts the runs that failed or timed out: a type links to its failed runs, and “timed out” to those
          that timed out.
        </p>
      }
    >
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
    </TypesCard>
  )
}

interface TypesCardProps {
  id: string
  title: string
  note: string
  /** What the card says when it has no rows. */
  empty: string
  /** The columns after the workflow type's; numbers are right-aligned, a hidden label is for screen readers. */
  columns: { label: string; num?: boolean; hidden?: boolean }[]
  /** The table's rows, one per type. */
  children: ReactNode[]
  /** Shown under the table when it has rows. */
  footer?: ReactNode
}

/** A card of a table of workflow types, or its empty text. */
function TypesCard({ id, title, note, empty, columns, children, footer }: TypesCardProps) {
  return (
    <section className="card" aria-labelledby={id}>
      <div className="card-header">
        <h2 id={id}>{title}</h2>
        <span className="muted small">{note}</span>
      </div>
      {children.length === 0 ? (
        <p className="muted">{empty}</p>
      ) : (
        <>
          <div className="table-wrap">
            <table className="table compact">
              <thead>
                <tr>
                  <th scope="col">Workflow type</th>
                  {columns.map((c) => (
                    <th key={c.label} scope="col" className={c.num ? 'num' : undefined}>
                      {c.hidden ? <span className="visually-hidden">{c.label}</span> : c.label}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>{children}</tbody>
            </table>
          </div>
          {footer}
        </>
      )}
    </section>
  )
}
