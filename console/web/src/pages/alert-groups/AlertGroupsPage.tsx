import { Link, useNavigate } from '@tanstack/react-router'
import { useState } from 'react'
import type { AlertGroupInfo } from '../../api/alerts'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { AlertGroupDialog } from './AlertGroupDialog'
import { useAlertGroups } from './queries'

/** Who a group's alerts go to, in a few words. */
export function recipients(g: AlertGroupInfo): string {
  return [...(g.users ?? []), ...(g.emails ?? [])].join(', ')
}

/** Every alert group: who its alerts go to and through which channels; a dialog creates one. */
export function AlertGroupsPage() {
  const list = useAlertGroups()
  const mayChange = useAccess().canSomewhere('operator')
  const [creating, setCreating] = useState(false)
  const navigate = useNavigate()
  const groups = list.data?.groups ?? []
  return (
    <section className="page" aria-labelledby="alert-groups-title">
      <div className="page-header">
        <h1 id="alert-groups-title">Alert groups</h1>
        {list.data && <span className="muted">{groups.length.toLocaleString()}</span>}
        <div className="spacer" />
        {mayChange && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New alert group…
          </button>
        )}
      </div>
      <p className="muted small">
        A DAG sends its alerts (a failed instance, a task past its timeout) to the group its <code>warning.group</code>{' '}
        names.
      </p>
      <ErrorMessage error={list.error} title="Listing alert groups failed" />
      {list.isPending && <p className="muted">Loading alert groups…</p>}
      {list.data &&
        (groups.length > 0 ? (
          <div className="table-wrap">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Channels</th>
                  <th scope="col">Email to</th>
                  <th scope="col">Cc</th>
                  <th scope="col">Webhook</th>
                </tr>
              </thead>
              <tbody>
                {groups.map((g) => (
                  <tr key={g.name}>
                    <td>
                      <Link to="/alert-groups/$name" params={{ name: g.name }} className="strong">
                        {g.name}
                      </Link>
                    </td>
                    <td>{g.channels.join(', ')}</td>
                    <td className="description">{recipients(g) || <span className="muted">—</span>}</td>
                    <td className="description">{(g.cc ?? []).join(', ') || <span className="muted">—</span>}</td>
                    <td className="description">
                      {g.url ? <span className="clamp">{g.url}</span> : <span className="muted">—</span>}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <p className="empty">No alert groups yet.</p>
        ))}
      {creating && (
        <AlertGroupDialog
          onClose={() => setCreating(false)}
          onSaved={(g) => navigate({ to: '/alert-groups/$name', params: { name: g.name } })}
        />
      )}
    </section>
  )
}
