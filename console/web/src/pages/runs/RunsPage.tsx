import { getRouteApi } from '@tanstack/react-router'
import { useQuery } from '@tanstack/react-query'
import { useMemo, useState } from 'react'
import type { BatchRef, ListRequest } from '../../api/types'
import { runStatuses } from '../../api/types'
import { searchWorkflows } from '../../api/workflows'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
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
  // What a batch acts on: the filter and the status chip chosen. A batch
  // leaves Strand's own runs alone unless the filter names their type, so
  // its filter needs no exclusion of them.
  const { exclude_workflow_types: _system, ...batchBase } = filter
  const batchFilter: ListRequest = search.status ? { ...batchBase, statuses: [search.status] } : batchBase
  const known = runStatuses.map((s) => counts[s])
  const matched = search.status
    ? counts[search.status]
    : known.every((n) => n !== undefined)
      ? known.reduce((a: number, n) => a + (n ?? 0), 0)
      : undefined
  // A new filter in the URL resets the form's draft; the page number is
  // the list's own.
  const urlKey = JSON.stringify([namespace, { ...search, page: undefined }])

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
        onPage={(page) => void navigate({ search: { ...search, page: page > 1 ? page : undefined } })}
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
  onPage: (page: number) => void
}

/** The page tokens this tab has seen, by page number, for one filter. */
function readTokens(key: string): Record<number, string> {
  try {
    return JSON.parse(sessionStorage.getItem(key) ?? '{}') as Record<number, string>
  } catch {
    return {}
  }
}

function saveToken(key: string, page: number, token: string) {
  try {
    sessionStorage.setItem(key, JSON.stringify({ ...readTokens(key), [page]: token }))
  } catch {
    // A full or refused storage costs a read of the pages before, later.
  }
}

/**
 * The table with its pager. The page number is in the URL; the token of a
 * page is the one the page before gave (kept for the tab), or, for a page
 * this tab has not seen (a reload, a link), the next page token of one
 * read of the runs before it.
 */
function RunsList({ namespace, search, filter, live, setLive, onPage }: RunsListProps) {
  const size = search.size ?? defaultPageSize
  const page = search.page ?? 1
  const base: ListRequest = { ...filter, page_size: size }
  if (search.status) base.statuses = [search.status]
  if (search.sort) base.order = search.sort
  const tokensKey = `strand.runs.pages ${JSON.stringify([namespace, base])}`
  const known = page > 1 ? readTokens(tokensKey)[page] : undefined
  const skipSize = Math.min((page - 1) * size, 10000)
  const skip = useQuery({
    queryKey: ['runs', namespace, 'skip', base, page],
    queryFn: ({ signal }) => searchWorkflows(namespace, { ...base, page_size: skipSize }, signal),
    enabled: page > 1 && known === undefined,
    staleTime: Infinity,
  })
  const token = page > 1 ? (known ?? skip.data?.next_page_token) : undefined
  const req: ListRequest = token ? { ...base, page_token: token } : base
  const q = useRunsPage(namespace, req, live, page === 1 || token !== undefined)
  const next = q.data?.next_page_token
  const runs = q.data?.runs ?? []
  // A page past the runs there are (or past what one read reaches).
  const pastEnd = page > 1 && known === undefined && skip.data !== undefined && !skip.data.next_page_token

  return (
    <>
      <div className="toolbar">
        <div className="pager" role="group" aria-label="Pages">
          <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
            ← Previous
          </button>
          <span className="muted">Page {page}</span>
          <button
            type="button"
            disabled={!next || q.isPlaceholderData}
            onClick={() => {
              if (!next) return
              saveToken(tokensKey, page + 1, next)
              onPage(page + 1)
            }}
          >
            Next →
          </button>
        </div>
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
      </div>
      <ErrorMessage error={q.error ?? skip.error} title="Listing runs failed" />
      {pastEnd ? (
        <p className="empty">
          No runs on page {page}.{' '}
          <button type="button" className="link" onClick={() => onPage(1)}>
            Go to the first page
          </button>
        </p>
      ) : (
        <>
          {(q.isPending || (page > 1 && token === undefined && skip.isPending)) && (
            <p className="muted">Loading runs…</p>
          )}
          {q.data &&
            (runs.length > 0 ? (
              <RunsTable runs={runs} now={q.dataUpdatedAt} />
            ) : (
              <p className="empty">No runs match.</p>
            ))}
        </>
      )}
    </>
  )
}
