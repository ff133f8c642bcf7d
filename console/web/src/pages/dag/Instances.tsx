import { Link } from '@tanstack/react-router'
import { useState } from 'react'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Pager, usePages } from '../../components/Pager'
import { RefreshToggle } from '../../components/RefreshToggle'
import { StatusBadge } from '../../components/StatusBadge'
import { Time } from '../../components/Time'
import { formatDuration, parseTime } from '../../components/timeFormat'
import { refreshMs, useDagInstances } from '../dags/queries'

/** A DAG's instances in a namespace, newest first, each linking to its page. */
export function Instances({ name, namespace }: { name: string; namespace: string }) {
  const [live, setLive] = useState(true)
  const [pages, setPages] = usePages()
  const q = useDagInstances(namespace, name, pages.token, live)
  const runs = q.data?.runs ?? []
  const next = q.data?.next_page_token
  return (
    <section className="card" aria-labelledby="instances-title">
      <div className="card-header">
        <h2 id="instances-title">Instances</h2>
        <span className="muted">in namespace {namespace}</span>
        <div className="spacer" />
        {(pages.before.length > 0 || next) && (
          <Pager pages={pages} setPages={setPages} next={next} waiting={q.isPlaceholderData} />
        )}
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
      </div>
      <ErrorMessage error={q.error} title="Listing the instances failed" />
      {q.isPending && <p className="muted">Loading instances…</p>}
      {q.data &&
        (runs.length === 0 ? (
          <p className="muted">No instances in namespace {namespace} yet.</p>
        ) : (
          <div className="table-wrap">
            <table className="table compact instances-table">
              <thead>
                <tr>
                  <th scope="col">Instance / run</th>
                  <th scope="col">Status</th>
                  <th scope="col">Started</th>
                  <th scope="col">Closed</th>
                  <th scope="col" className="num">
                    Duration
                  </th>
                </tr>
              </thead>
              <tbody>
                {runs.map((r) => {
                  const start = parseTime(r.start_time)
                  const end = parseTime(r.close_time)?.getTime() ?? q.dataUpdatedAt
                  return (
                    <tr key={r.run_id} data-instance={r.workflow_id}>
                      <td>
                        <Link
                          to="/dag-instances/$namespace/$workflowId"
                          params={{ namespace: r.namespace, workflowId: r.workflow_id }}
                          className="strong"
                        >
                          {r.workflow_id}
                        </Link>
                        <div className="mono small muted">{r.run_id}</div>
                      </td>
                      <td>
                        <StatusBadge status={r.status} />
                      </td>
                      <td>
                        <Time value={r.start_time} />
                      </td>
                      <td>
                        <Time value={r.close_time} />
                      </td>
                      <td className="num">{start ? formatDuration(end - start.getTime()) : '—'}</td>
                    </tr>
                  )
                })}
              </tbody>
            </table>
          </div>
        ))}
    </section>
  )
}
