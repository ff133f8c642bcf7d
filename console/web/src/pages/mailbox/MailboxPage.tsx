import { getRouteApi, Link } from '@tanstack/react-router'
import { useState } from 'react'
import type { RunRefJson } from '../../api/messages'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Fact } from '../../components/Fact'
import { JsonView } from '../../components/JsonView'
import { RefreshToggle } from '../../components/RefreshToggle'
import { Time } from '../../components/Time'
import { refreshMs, useMailbox } from '../messages/queries'

const route = getRouteApi('/namespaces/$namespace/mailbox')

/** One mailbox: the messages it keeps, the runs waiting and its last deliveries. */
export function MailboxPage() {
  const { namespace } = route.useParams()
  const { name, key } = route.useSearch()
  const [live, setLive] = useState(true)
  const q = useMailbox(namespace, name, key, live)
  const d = q.data
  return (
    <section className="page" aria-labelledby="mailbox-title">
      <div className="page-header">
        <h1 id="mailbox-title">
          Mailbox {name} / <span className="mono">{key || '(empty key)'}</span>
        </h1>
        <div className="spacer" />
        <Link to="/namespaces/$namespace/messages" params={{ namespace }} search={{ name }}>
          All mailboxes of {name}
        </Link>
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
      </div>
      <ErrorMessage error={q.error} title="Reading the mailbox failed" />
      {q.isPending && <p className="muted">Loading the mailbox…</p>}
      {d && (
        <>
          <section className="card" aria-labelledby="mailbox-facts-title">
            <h2 id="mailbox-facts-title">Mailbox</h2>
            <dl className="facts compact">
              <Fact term="Message name">{d.name}</Fact>
              <Fact term="Correlation key">
                <span className="mono">{d.correlation_key}</span>
              </Fact>
              <Fact term="Its run">
                {d.run_id ? (
                  <RunLink namespace={namespace} run={{ workflow_id: d.workflow_id, run_id: d.run_id }} />
                ) : (
                  'none: the mailbox holds nothing'
                )}
              </Fact>
            </dl>
          </section>
          <section className="card" aria-labelledby="kept-title">
            <h2 id="kept-title">Kept messages ({d.kept.length})</h2>
            {d.kept.length === 0 ? (
              <p className="muted">None: no message waits for a run.</p>
            ) : (
              <div className="table-wrap">
                <table className="table">
                  <thead>
                    <tr>
                      <th scope="col">Message</th>
                      <th scope="col">Sent</th>
                      <th scope="col">Expires</th>
                      <th scope="col">Kind</th>
                      <th scope="col">Payload</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.kept.map((m) => (
                      <tr key={m.message_id}>
                        <td className="mono">
                          {m.message_id}
                          {m.sender && <div className="small muted">from {m.sender}</div>}
                        </td>
                        <td>
                          <Time value={m.sent} />
                        </td>
                        <td>
                          <Time value={m.expires} />
                        </td>
                        <td>
                          {m.broadcast
                            ? `broadcast, delivered to ${m.delivered_to?.length ?? 0}`
                            : 'to the first waiting'}
                          {m.priority ? `, priority ${m.priority}` : ''}
                        </td>
                        <td>
                          <JsonView value={m.payload} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
          <section className="card" aria-labelledby="waiting-title">
            <h2 id="waiting-title">Runs waiting ({d.waiting.length})</h2>
            {d.waiting.length === 0 ? (
              <p className="muted">None.</p>
            ) : (
              <div className="table-wrap">
                <table className="table">
                  <thead>
                    <tr>
                      <th scope="col">Run</th>
                      <th scope="col">Waiting since</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.waiting.map((w) => (
                      <tr key={w.id}>
                        <td>
                          <RunLink namespace={namespace} run={w.run} />
                        </td>
                        <td>
                          <Time value={w.since} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
          {d.delivered && d.delivered.length > 0 && (
            <section className="card" aria-labelledby="delivered-title">
              <h2 id="delivered-title">Delivered lately</h2>
              <div className="table-wrap">
                <table className="table">
                  <thead>
                    <tr>
                      <th scope="col">Message</th>
                      <th scope="col">To</th>
                      <th scope="col">At</th>
                    </tr>
                  </thead>
                  <tbody>
                    {[...d.delivered].reverse().map((e) => (
                      <tr key={e.message_id + e.at}>
                        <td className="mono">{e.message_id}</td>
                        <td>
                          {e.started ? 'started ' : ''}
                          <RunLink namespace={namespace} run={e.run} />
                        </td>
                        <td>
                          <Time value={e.at} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </section>
          )}
        </>
      )}
    </section>
  )
}

function RunLink({ namespace, run }: { namespace: string; run: RunRefJson }) {
  return (
    <Link
      to="/namespaces/$namespace/runs/$workflowId/$runId"
      params={{ namespace: run.namespace || namespace, workflowId: run.workflow_id, runId: run.run_id ?? '' }}
      className="mono"
    >
      {run.workflow_id}
    </Link>
  )
}
