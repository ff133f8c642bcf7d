import { getRouteApi, Link } from '@tanstack/react-router'
import { useState } from 'react'
import type { BatchSummary } from '../../api/types'
import { ErrorMessage } from '../../components/ErrorMessage'
import { RefreshToggle } from '../../components/RefreshToggle'
import { Time } from '../../components/Time'
import { formatDuration, parseTime } from '../../components/timeFormat'
import { BatchState } from './BatchState'
import { operationLabels } from './describe'
import { refreshMs, useBatches } from './queries'

const route = getRouteApi('/namespaces/$namespace/batches')

/** The batch operations of a namespace, newest first; the runs page starts them. */
export function BatchesPage() {
  const { namespace } = route.useParams()
  const [live, setLive] = useState(true)
  const q = useBatches(namespace, live)
  const batches = q.data?.batches ?? []
  return (
    <section className="page" aria-labelledby="batches-title">
      <div className="page-header">
        <h1 id="batches-title">Batches</h1>
        <span className="muted">namespace {namespace}</span>
        <div className="spacer" />
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
      </div>
      <ErrorMessage error={q.error} title="Listing batches failed" />
      {q.isPending && <p className="muted">Loading batches…</p>}
      {q.data &&
        (batches.length > 0 ? (
          <BatchesTable namespace={namespace} batches={batches} now={q.dataUpdatedAt} />
        ) : (
          <div className="empty">
            <p className="strong">No batches in this namespace.</p>
            <p>
              A batch signals, cancels, terminates, resets, pauses or resumes every run a filter matches. Filter the{' '}
              <Link to="/namespaces/$namespace/runs" params={{ namespace }}>
                runs
              </Link>
              , then choose Batch….
            </p>
          </div>
        ))}
    </section>
  )
}

function BatchesTable({ namespace, batches, now }: { namespace: string; batches: BatchSummary[]; now: number }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Batch ID</th>
            <th scope="col">Operation</th>
            <th scope="col">State</th>
            <th scope="col">Started</th>
            <th scope="col">Closed</th>
            <th scope="col">Duration</th>
          </tr>
        </thead>
        <tbody>
          {batches.map((b) => {
            const start = parseTime(b.start_time)
            const end = parseTime(b.close_time)?.getTime() ?? now
            return (
              <tr key={b.batch_id}>
                <td>
                  <Link
                    to="/namespaces/$namespace/batches/$batchId"
                    params={{ namespace, batchId: b.batch_id }}
                    className="strong mono"
                  >
                    {b.batch_id}
                  </Link>
                </td>
                <td>{operationLabels[b.operation] ?? b.operation}</td>
                <td>
                  <BatchState state={b.state} />
                </td>
                <td>
                  <Time value={b.start_time} />
                </td>
                <td>
                  <Time value={b.close_time} />
                </td>
                <td className="num">{start ? formatDuration(end - start.getTime()) : '—'}</td>
              </tr>
            )
          })}
        </tbody>
      </table>
    </div>
  )
}
