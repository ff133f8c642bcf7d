import { getRouteApi } from '@tanstack/react-router'
import { useMemo, useState } from 'react'
import type { BatchRef, ListRequest } from '../../api/types'
import { runStatuses } from '../../api/types'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Pager, usePages } from '../../components/Pager'
import { RefreshToggle } from '../../components/RefreshToggle'
import { BatchDialog } from './BatchDialog'
import { BatchNotice } from './BatchNotice'
import { Filters } from './Filters'
import { refreshMs, useRunsPage, useStatusCounts } from './queries'
import { RunsTable } from './RunsTable'
import { defaultPageSize, toFilter, type RunsSearch } from './search'
import { StatusChips } from './StatusChips'

const route = getRouteApi('/namespaces/$namespace/runs')

/**
 * The runs of a namespace: counts by status, filters and a paged table; a
 * batch operation acts on every run they match.
 */
export function RunsPage() {
  const { namespace } = route.useParams()
  const search = route.useSearch()
  const navigate = route.useNavigate()
  const [live, setLive] = useState(true)
  const filter = useMemo(() => toFilter(search), [search])
  const { counts, error: countError } = useStatusCounts(namespace, filter, live)
  const [batching, setBatching] = useState(false)
  // A batch is an operator's.
  const mayBatch = useAccess().can(namespace, 'operator')
  // The batch started from here, and the runs it was to act on.
  const [batch, setBatch] = useState<{ ref: BatchRef; expected: number | undefined } | null>(null)
  const apply = (next: RunsSearch) => void navigate({ search: next })
  // What a batch acts on: the filter and the status chip chosen.
  const batchFilter: ListRequest = search.status ? { ...filter, statuses: [search.status] } : filter
  const known = runStatuses.map((s) => counts[s])
  const matched = search.status
    ? counts[search.status]
    : known.every((n) => n !== undefined)
      ? known.reduce((a: number, n) => a + (n ?? 0), 0)
      : undefined
  // A new URL resets the form's draft, and starts the list again at its
  // first page.
  const urlKey = JSON.stringify([namespace, search])

  return (
    <section className="page" aria-labelledby="runs-title">
      <div className="page-header">
        <h1 id="runs-title">Runs</h1>
        <div className="spacer" />
        {mayBatch && (
          <button type="button" onClick={() => setBatching(true)} disabled={matched === 0}>
            Batch…
          </button>
        )}
      </div>
      {batch && (
        <BatchNotice
          key={batch.ref.batch_id}
          batch={batch.ref}
          expected={batch.expected}
          onDismiss={() => setBatch(null)}
        />
      )}
      <Filters key={`filters ${urlKey}`} search={search} onApply={apply} />
      <StatusChips namespace={namespace} search={search} counts={counts} error={countError} />
      <RunsList
        key={`list ${urlKey}`}
        namespace={namespace}
        search={search}
        filter={filter}
        live={live}
        setLive={setLive}
      />
      {batching && (
        <BatchDialog
          namespace={namespace}
          filter={batchFilter}
          count={matched}
          onClose={() => setBatching(false)}
          onStarted={(ref) => setBatch({ ref, expected: matched })}
        />
      )}
    </section>
  )
}

interface RunsListProps {
  namespace: string
  search: RunsSearch
  filter: ListRequest
  live: boolean
  setLive: (live: boolean) => void
}

/** The table with its pager: the tokens of the pages before this one are a stack. */
function RunsList({ namespace, search, filter, live, setLive }: RunsListProps) {
  const [pages, setPages] = usePages()
  const req: ListRequest = { ...filter, page_size: search.size ?? defaultPageSize }
  if (search.status) req.statuses = [search.status]
  if (pages.token) req.page_token = pages.token
  const q = useRunsPage(namespace, req, live)
  const next = q.data?.next_page_token
  const runs = q.data?.runs ?? []

  return (
    <>
      <div className="toolbar">
        <Pager pages={pages} setPages={setPages} next={next} waiting={q.isPlaceholderData} />
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
      </div>
      <ErrorMessage error={q.error} title="Listing runs failed" />
      {q.isPending && <p className="muted">Loading runs…</p>}
      {q.data &&
        (runs.length > 0 ? <RunsTable runs={runs} now={q.dataUpdatedAt} /> : <p className="empty">No runs match.</p>)}
    </>
  )
}
