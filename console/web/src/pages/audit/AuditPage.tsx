import { getRouteApi } from '@tanstack/react-router'
import { useMemo, useState } from 'react'
import { ApiError } from '../../api/client'
import { mayReadAudit, useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Pager, usePages } from '../../components/Pager'
import { RefreshToggle } from '../../components/RefreshToggle'
import { AuditTable } from './AuditTable'
import { Filters } from './Filters'
import { refreshMs, useAuditNamespaces, useAuditPage } from './queries'
import { describeAuditSearch, pageSize, toAuditFilter, type AuditSearch } from './search'

const route = getRouteApi('/audit')

/**
 * The audit log: the changes made through the API, newest first, by
 * namespace, actor and time (the URL holds the filter), in pages. A
 * cluster admin reads every namespace's entries, a namespace's admin that
 * namespace's; anyone else is told so, and not shown the page's link.
 */
export function AuditPage() {
  const search = route.useSearch()
  const navigate = route.useNavigate()
  const mayRead = mayReadAudit(useAccess())
  const choices = useAuditNamespaces()
  const [live, setLive] = useState(true)
  // No namespace in the URL: every one for a cluster admin, the first the
  // user administers for anyone else.
  const namespace = search.namespace ?? (choices.all ? undefined : choices.names?.[0])
  // A new URL (or the namespace it meant, known) resets the form's draft
  // and starts the list again at its first page.
  const urlKey = JSON.stringify([search, namespace])
  return (
    <section className="page" aria-labelledby="audit-title">
      <div className="page-header">
        <h1 id="audit-title">Audit log</h1>
        {mayRead && (namespace || choices.all) && (
          <span className="muted">{namespace ? `namespace ${namespace}` : 'all namespaces'}</span>
        )}
      </div>
      {!mayRead ? (
        <div className="empty">
          <p className="strong">The audit log is for admins.</p>
          <p>A cluster admin reads every namespace&apos;s entries, a namespace&apos;s admins that namespace&apos;s.</p>
        </div>
      ) : (
        <>
          <Filters
            key={`filters ${urlKey}`}
            search={search}
            namespace={namespace}
            choices={choices}
            onApply={(s) => void navigate({ search: s })}
          />
          <ErrorMessage error={choices.error} title="Listing the namespaces failed" />
          {!choices.all && choices.names?.length === 0 && !search.namespace ? (
            <p className="empty">You are the admin of no namespace.</p>
          ) : (
            <AuditList
              key={`list ${urlKey}`}
              search={search}
              namespace={namespace}
              ready={choices.all || namespace !== undefined}
              live={live}
              setLive={setLive}
            />
          )}
        </>
      )}
    </section>
  )
}

interface AuditListProps {
  search: AuditSearch
  /** The namespace whose entries are listed (undefined: every one). */
  namespace: string | undefined
  /** Whether the namespace is known: a namespace's admin waits for their namespaces. */
  ready: boolean
  live: boolean
  setLive: (live: boolean) => void
}

/** A page of the entries the search selects, with the pager: the tokens of the pages before are a stack. */
function AuditList({ search, namespace, ready, live, setLive }: AuditListProps) {
  const [pages, setPages] = usePages()
  const filter = useMemo(() => toAuditFilter(search, namespace), [search, namespace])
  const q = useAuditPage(filter, pageSize, pages.token, live, ready)
  const entries = q.data?.entries ?? []
  const next = q.data?.next_page_token
  const filtered = describeAuditSearch(search)
  // A server made without an audit log (server.Options.Audit) has no route for it.
  const noLog = q.error instanceof ApiError && q.error.status === 404
  return (
    <>
      <div className="toolbar">
        <Pager pages={pages} setPages={setPages} next={next} waiting={q.isPlaceholderData} />
        {filtered && <span className="muted">{filtered}</span>}
        <div className="spacer" />
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
      </div>
      {noLog ? (
        <p className="empty">This server keeps no audit log.</p>
      ) : (
        <ErrorMessage error={q.error} title="Reading the audit log failed" />
      )}
      {q.isPending && !q.error && <p className="muted">Loading the audit log…</p>}
      {q.data &&
        (entries.length > 0 ? (
          <AuditTable entries={entries} />
        ) : (
          <div className="empty">
            <p className="strong">{filtered || pages.before.length > 0 ? 'No entries match.' : 'No changes yet.'}</p>
            <p>
              The audit log records every change made through the API (the console&apos;s, the CLI&apos;s, a
              client&apos;s), and every change refused; not the reads, nor the workers&apos; tasks.
            </p>
          </div>
        ))}
    </>
  )
}
