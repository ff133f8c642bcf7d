import { getRouteApi, Link } from '@tanstack/react-router'
import { useState } from 'react'
import type { MailboxSummary } from '../../api/messages'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { RefreshToggle } from '../../components/RefreshToggle'
import { Time } from '../../components/Time'
import { refreshMs, useMailboxes } from './queries'
import { RulesSection } from './RulesSection'
import { SendMessageDialog } from './SendMessageDialog'

const route = getRouteApi('/namespaces/$namespace/messages')

/**
 * The mailboxes of a namespace (the messages kept and the runs waiting, by
 * message name and correlation key), a dialog that sends a message, and the
 * rules that make a message start a run.
 */
export function MessagesPage() {
  const { namespace } = route.useParams()
  const { name } = route.useSearch()
  const navigate = route.useNavigate()
  const access = useAccess()
  const [live, setLive] = useState(true)
  const [sending, setSending] = useState(false)
  const [sent, setSent] = useState<string | null>(null)
  const [filter, setFilter] = useState(name ?? '')
  const q = useMailboxes(namespace, name, live)
  const mailboxes = q.data?.mailboxes ?? []

  return (
    <section className="page" aria-labelledby="messages-title">
      <div className="page-header">
        <h1 id="messages-title">Messages</h1>
        <span className="muted">namespace {namespace}</span>
        <div className="spacer" />
        <span role="status">{sent && <>Message {sent} sent.</>}</span>
        {access.can(namespace, 'writer') && (
          <button type="button" className="primary" onClick={() => setSending(true)}>
            Send message…
          </button>
        )}
      </div>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault()
          void navigate({ search: filter.trim() ? { name: filter.trim() } : {} })
        }}
      >
        <label>
          Message name <input value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="all" />
        </label>
        <button type="submit">Filter</button>
        <div className="spacer" />
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
      </form>
      <ErrorMessage error={q.error} title="Listing mailboxes failed" />
      {q.isPending && <p className="muted">Loading mailboxes…</p>}
      {q.data &&
        (mailboxes.length > 0 ? (
          <MailboxTable namespace={namespace} mailboxes={mailboxes} />
        ) : (
          <div className="empty">
            <p className="strong">No mailbox {name ? `of ${name} ` : ''}keeps a message or has a run waiting.</p>
            <p>
              A run waits for a message with <code>workflow.Receive(ctx, name, key)</code>; a message sent before any
              run waits is kept here until one does or its time to live ends.
            </p>
          </div>
        ))}
      <RulesSection namespace={namespace} mayEdit={access.can(namespace, 'admin')} />
      {sending && (
        <SendMessageDialog namespace={namespace} onClose={() => setSending(false)} onSent={(id) => setSent(id)} />
      )}
    </section>
  )
}

function MailboxTable({ namespace, mailboxes }: { namespace: string; mailboxes: MailboxSummary[] }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="visually-hidden">Mailboxes</caption>
        <thead>
          <tr>
            <th scope="col">Message name</th>
            <th scope="col">Correlation key</th>
            <th scope="col" className="num">
              Kept
            </th>
            <th scope="col" className="num">
              Waiting
            </th>
            <th scope="col">Since</th>
          </tr>
        </thead>
        <tbody>
          {mailboxes.map((m) => (
            <tr key={m.workflow_id}>
              <td>{m.name}</td>
              <td>
                <Link
                  to="/namespaces/$namespace/mailbox"
                  params={{ namespace }}
                  search={{ name: m.name, key: m.correlation_key }}
                  className="strong mono"
                >
                  {m.correlation_key || '(empty key)'}
                </Link>
              </td>
              <td className="num">{m.kept}</td>
              <td className="num">{m.waiting}</td>
              <td>
                <Time value={m.since} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
