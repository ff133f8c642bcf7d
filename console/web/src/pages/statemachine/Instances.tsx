import { Link } from '@tanstack/react-router'
import { useId, useMemo, useState } from 'react'
import { smAttr, smStatuses, type SmDefinition } from '../../api/statemachines'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Pager, usePages } from '../../components/Pager'
import { RefreshToggle } from '../../components/RefreshToggle'
import { smStatusLabel } from '../../components/smKinds'
import { SmStatusBadge } from '../../components/SmStatusBadge'
import { Time } from '../../components/Time'
import { refreshMs, useSmInstances } from '../statemachines/queries'

/** A state machine's instances in a namespace, newest first, filtered by state and status. */
export function Instances({ definition: d, namespace }: { definition: SmDefinition; namespace: string }) {
  const [live, setLive] = useState(true)
  const [pages, setPages] = usePages()
  const [state, setState] = useState('')
  const [status, setStatus] = useState('')
  const filter = useMemo(() => ({ type: d.type, state, status }), [d.type, state, status])
  const q = useSmInstances(namespace, filter, pages.token, live)
  const runs = q.data?.runs ?? []
  const next = q.data?.next_page_token
  const id = useId()
  const refilter = (f: () => void) => {
    f()
    setPages({ before: [], token: undefined })
  }
  return (
    <section className="card" aria-labelledby="instances-title">
      <div className="card-header">
        <h2 id="instances-title">Instances</h2>
        <span className="muted">in namespace {namespace}</span>
        <div className="spacer" />
        <label className="inline-field" htmlFor={`${id}-state`}>
          <span>State</span>
        </label>
        <select id={`${id}-state`} value={state} onChange={(e) => refilter(() => setState(e.target.value))}>
          <option value="">any</option>
          {(d.states ?? []).map((s) => (
            <option key={s.name} value={s.name}>
              {s.name}
            </option>
          ))}
        </select>
        <label className="inline-field" htmlFor={`${id}-status`}>
          <span>Status</span>
        </label>
        <select id={`${id}-status`} value={status} onChange={(e) => refilter(() => setStatus(e.target.value))}>
          <option value="">any</option>
          {smStatuses.map((s) => (
            <option key={s} value={s}>
              {smStatusLabel(s)}
            </option>
          ))}
        </select>
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
          <p className="muted">No instances{state || status ? ' match' : ` in namespace ${namespace} yet`}.</p>
        ) : (
          <div className="table-wrap">
            <table className="table compact sm-instances">
              <thead>
                <tr>
                  <th scope="col">Instance</th>
                  <th scope="col">State</th>
                  <th scope="col">Status</th>
                  <th scope="col">Business key</th>
                  <th scope="col">Created</th>
                  <th scope="col">Finished</th>
                </tr>
              </thead>
              <tbody>
                {runs.map((r) => {
                  const a = r.attributes ?? {}
                  return (
                    <tr key={r.run_id} data-instance={r.workflow_id} data-state={a[smAttr.state] ?? ''}>
                      <td>
                        <Link
                          to="/statemachine-instances/$namespace/$id"
                          params={{ namespace: r.namespace, id: r.workflow_id }}
                          className="strong"
                        >
                          {r.workflow_id}
                        </Link>
                      </td>
                      <td className="mono">{a[smAttr.state] ?? '—'}</td>
                      <td>{a[smAttr.status] ? <SmStatusBadge status={a[smAttr.status] ?? ''} /> : '—'}</td>
                      <td>{r.business_key || <span className="muted">—</span>}</td>
                      <td>
                        <Time value={r.start_time} />
                      </td>
                      <td>
                        <Time value={r.close_time} />
                      </td>
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
