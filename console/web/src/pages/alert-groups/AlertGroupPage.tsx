import { getRouteApi, Link, useNavigate } from '@tanstack/react-router'
import { useState } from 'react'
import type { SentAlert } from '../../api/alerts'
import { ApiError } from '../../api/client'
import { useAccess } from '../../components/access'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Fact } from '../../components/Fact'
import { Time } from '../../components/Time'
import { AlertGroupDialog } from './AlertGroupDialog'
import { useAlertGroup, useDeleteAlertGroup, useTestAlertGroup } from './queries'

const route = getRouteApi('/alert-groups/$name')

/** One alert group: its recipients and channels, the last alerts it sent; edit, test and delete it. */
export function AlertGroupPage() {
  const { name } = route.useParams()
  const q = useAlertGroup(name)
  const mayChange = useAccess().canSomewhere('operator')
  const [editing, setEditing] = useState(false)
  const [deleting, setDeleting] = useState(false)
  const test = useTestAlertGroup()
  const del = useDeleteAlertGroup()
  const navigate = useNavigate()
  const g = q.data
  return (
    <section className="page" aria-labelledby="alert-group-title">
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/alert-groups">Alert groups</Link>
        <span aria-hidden="true"> / </span>
        <span>{name}</span>
      </nav>
      <div className="page-header">
        <h1 id="alert-group-title" className="run-title">
          {name}
        </h1>
        <div className="spacer" />
        <span role="status" className="muted">
          {test.data &&
            test.data.results
              .map((r) => `${r.channel}: ${r.delivered ? 'delivered' : 'not delivered'} (${r.answer})`)
              .join('; ')}
        </span>
        {g && mayChange && (
          <>
            <button type="button" onClick={() => test.mutate(name)} disabled={test.isPending}>
              Send a test alert
            </button>
            <button type="button" onClick={() => setEditing(true)}>
              Edit…
            </button>
            <button type="button" className="danger" onClick={() => setDeleting(true)}>
              Delete…
            </button>
          </>
        )}
      </div>
      <ErrorMessage error={test.error} title="The test alert failed" />
      {q.error instanceof ApiError && q.error.status === 404 && !g ? (
        <p className="empty">
          No alert group <strong>{name}</strong>: it may have been deleted.
        </p>
      ) : (
        <ErrorMessage error={q.error} title="Reading the alert group failed" />
      )}
      {q.isPending && <p className="muted">Loading the alert group…</p>}
      {g && (
        <>
          {g.description && <p>{g.description}</p>}
          <h2>Recipients and channels</h2>
          <dl className="facts compact">
            <Fact term="Channels">{g.channels.join(', ')}</Fact>
            <Fact term="Users">{(g.users ?? []).join(', ') || <span className="muted">none</span>}</Fact>
            <Fact term="Email addresses">{(g.emails ?? []).join(', ') || <span className="muted">none</span>}</Fact>
            <Fact term="Cc">{(g.cc ?? []).join(', ') || <span className="muted">none</span>}</Fact>
            <Fact term="Webhook">
              {g.url ? <span className="wrap">{g.url}</span> : <span className="muted">none</span>}
              {g.headers && Object.keys(g.headers).length > 0 && (
                <span className="muted"> (headers {Object.keys(g.headers).join(', ')})</span>
              )}
            </Fact>
            <Fact term="Changed">
              <Time value={g.modified_at} /> {g.modified_by && <span className="muted">by {g.modified_by}</span>}
            </Fact>
          </dl>
          <h2>Recent alerts</h2>
          {g.recent.length === 0 ? <p className="empty">No alert sent yet.</p> : <RecentAlerts recent={g.recent} />}
        </>
      )}
      {editing && g && <AlertGroupDialog group={g} onClose={() => setEditing(false)} onSaved={() => undefined} />}
      {deleting && (
        <ConfirmDialog
          title={`Delete alert group ${name}?`}
          description="The DAGs that name it send no more alerts until a group of this name is created again."
          confirmLabel="Delete alert group"
          danger
          pending={del.isPending}
          error={del.error}
          onClose={() => setDeleting(false)}
          onConfirm={() => del.mutate(name, { onSuccess: () => navigate({ to: '/alert-groups' }) })}
        />
      )}
    </section>
  )
}

/** What an alert said, in a line: the failed tasks and their errors, or its message. */
function said(s: SentAlert): string {
  const a = s.alert
  if (a.failed && a.failed.length > 0) return a.failed.map((f) => `${f.name}: ${f.error}`).join('; ')
  if (a.task) return `${a.task}: ${a.message ?? ''}`
  return a.message ?? ''
}

/** The last alerts the group sent, newest first, with each channel's answer. */
function RecentAlerts({ recent }: { recent: SentAlert[] }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Event</th>
            <th scope="col">DAG instance</th>
            <th scope="col">Business date</th>
            <th scope="col">What happened</th>
            <th scope="col">Channels</th>
          </tr>
        </thead>
        <tbody>
          {recent.map((s, i) => (
            <tr key={i}>
              <td>
                <Time value={s.alert.time} />
              </td>
              <td>{s.alert.event.replace('_', ' ')}</td>
              <td>
                {s.alert.instance ? (
                  <Link
                    to="/dag-instances/$namespace/$workflowId"
                    params={{ namespace: s.alert.namespace || 'default', workflowId: s.alert.instance }}
                  >
                    {s.alert.instance}
                  </Link>
                ) : (
                  <span className="muted">—</span>
                )}
              </td>
              <td>
                {s.alert.business_date ? (
                  <>
                    {s.alert.business_date} <span className="muted">{s.alert.time_zone}</span>
                  </>
                ) : (
                  <span className="muted">—</span>
                )}
              </td>
              <td className="description">{said(s)}</td>
              <td>
                <ul className="channel-results">
                  {s.results.map((r) => (
                    <li key={r.channel} title={r.answer}>
                      {r.channel}: {r.delivered ? 'delivered' : <strong>not delivered</strong>}
                      {!r.delivered && <span className="muted"> ({r.answer})</span>}
                    </li>
                  ))}
                </ul>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
