import { Link } from '@tanstack/react-router'
import { useState } from 'react'
import type { Namespace } from '../../api/types'
import { useAccess } from '../../components/access'
import { Attributes } from '../../components/Attributes'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Time } from '../../components/Time'
import { CreateNamespaceDialog, EditNamespaceDialog } from './NamespaceDialogs'
import { useNamespaceList } from './queries'
import { QuotasCell } from './Quotas'
import { formatRetention } from './retention'

/** Every namespace with its retention and quotas; a dialog creates one (cluster admins), another edits one (its admins). */
export function NamespacesPage() {
  const list = useNamespaceList()
  const access = useAccess()
  const [creating, setCreating] = useState(false)
  // The namespace being edited, as its row was when the dialog opened.
  const [editing, setEditing] = useState<Namespace | null>(null)
  // What the last create or edit did, read out politely.
  const [done, setDone] = useState<{ verb: string; name: string } | null>(null)
  const namespaces = list.data ?? []

  return (
    <section className="page" aria-labelledby="namespaces-title">
      <div className="page-header">
        <h1 id="namespaces-title">Namespaces</h1>
        {list.data && <span className="muted">{namespaces.length.toLocaleString()}</span>}
        <div className="spacer" />
        <span role="status">
          {done && (
            <>
              Namespace{' '}
              <Link to="/namespaces/$namespace/runs" params={{ namespace: done.name }} className="strong">
                {done.name}
              </Link>{' '}
              {done.verb}.
            </>
          )}
        </span>
        {access.clusterAdmin && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New namespace…
          </button>
        )}
      </div>
      <ErrorMessage error={list.error} title="Listing namespaces failed" />
      {list.isPending && <p className="muted">Loading namespaces…</p>}
      {list.data &&
        (namespaces.length > 0 ? (
          <NamespacesTable namespaces={namespaces} onEdit={setEditing} />
        ) : (
          <p className="empty">No namespaces.</p>
        ))}
      {creating && (
        <CreateNamespaceDialog
          onClose={() => setCreating(false)}
          onCreated={(ns) => setDone({ verb: 'created', name: ns.name })}
        />
      )}
      {editing && (
        <EditNamespaceDialog
          namespace={editing}
          onClose={() => setEditing(null)}
          onSaved={(ns) => setDone({ verb: `saved (version ${ns.version ?? 0})`, name: ns.name })}
        />
      )}
    </section>
  )
}

/** The namespaces; each row links to its runs, shows its quotas and has an edit button (for the namespace's admins). */
function NamespacesTable({ namespaces, onEdit }: { namespaces: Namespace[]; onEdit: (ns: Namespace) => void }) {
  const access = useAccess()
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Description</th>
            <th scope="col">Retention</th>
            <th scope="col">Data</th>
            <th scope="col">Quotas</th>
            <th scope="col" className="num">
              Version
            </th>
            <th scope="col">Created</th>
            <th scope="col">Updated</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {namespaces.map((ns) => (
            <tr key={ns.name}>
              <td>
                <Link to="/namespaces/$namespace/runs" params={{ namespace: ns.name }} className="strong">
                  {ns.name}
                  <span className="visually-hidden"> runs</span>
                </Link>
              </td>
              <td className="description">
                {ns.description ? (
                  <span className="clamp" title={ns.description}>
                    {ns.description}
                  </span>
                ) : (
                  <span className="muted">—</span>
                )}
              </td>
              <td className="nowrap" title={ns.retention ? `${ns.retention} ns` : undefined}>
                {formatRetention(ns.retention)}
              </td>
              <td>
                <Attributes attrs={ns.data} />
              </td>
              <td>
                <QuotasCell namespace={ns.name} />
              </td>
              <td className="num">{ns.version ?? '—'}</td>
              <td>
                <Time value={ns.created_at} />
              </td>
              <td>
                <Time value={ns.updated_at} />
              </td>
              <td className="num">
                {access.can(ns.name, 'admin') && (
                  <button
                    type="button"
                    className="small"
                    onClick={() => onEdit(ns)}
                    aria-label={`Edit namespace ${ns.name}…`}
                  >
                    Edit…
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
