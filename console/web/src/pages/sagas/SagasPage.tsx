import { getRouteApi, Link } from '@tanstack/react-router'
import { useId, useState, type FormEvent } from 'react'
import { listedSagaStates, listedState, sagaAttr } from '../../api/sagas'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Pager, usePages } from '../../components/Pager'
import { RefreshToggle } from '../../components/RefreshToggle'
import { StatusBadge, statusLabel } from '../../components/StatusBadge'
import { Time } from '../../components/Time'
import { SagaStateBadge } from '../saga/badges'
import { BatchForm } from './BatchForm'
import { refreshMs, useSagas } from './queries'
import { describeSagaSearch, sinceMs, toSagaFilter, type SagasSearch, type Since } from './search'

const route = getRouteApi('/namespaces/$namespace/sagas')

/**
 * The sagas of a namespace, newest first: filtered by name, state and
 * start time (the URL holds the filter), each row leading to the saga's
 * page; and a batch that acts on every saga the filter selects.
 */
export function SagasPage() {
  const { namespace } = route.useParams()
  // A batch of sagas is an operator's.
  const mayBatch = useAccess().can(namespace, 'operator')
  const search = route.useSearch()
  const navigate = route.useNavigate()
  const [live, setLive] = useState(true)
  // A new URL resets the form's draft and starts the list at its first page.
  const urlKey = JSON.stringify([namespace, search])
  return (
    <section className="page" aria-labelledby="sagas-title">
      <div className="page-header">
        <h1 id="sagas-title">Sagas</h1>
        <span className="muted">in namespace {namespace}</span>
      </div>
      <Filters key={`filters ${urlKey}`} search={search} onApply={(s) => void navigate({ search: s })} />
      <SagasList key={`list ${urlKey}`} namespace={namespace} search={search} live={live} setLive={setLive} />
      {mayBatch && <BatchForm namespace={namespace} search={search} />}
    </section>
  )
}

const sinceLabels: Record<Since, string> = {
  hour: 'In the last hour',
  day: 'In the last day',
  week: 'In the last week',
}

/** The filter form: a draft until applied, then it goes to the URL. */
function Filters({ search, onApply }: { search: SagasSearch; onApply: (s: SagasSearch) => void }) {
  const [draft, setDraft] = useState({ name: search.name ?? '', state: search.state ?? '', since: search.since ?? '' })
  const set = (k: keyof typeof draft) => (e: { target: { value: string } }) =>
    setDraft({ ...draft, [k]: e.target.value })
  const id = useId()
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const next: SagasSearch = {}
    if (draft.name.trim()) next.name = draft.name.trim()
    if (draft.state) next.state = draft.state as SagasSearch['state']
    if (draft.since) next.since = draft.since as Since
    onApply(next)
  }
  return (
    <form className="filters" onSubmit={submit} aria-label="Filter sagas">
      <div className="field">
        <label htmlFor={`${id}-name`} className="field-label">
          Name
        </label>
        <input
          id={`${id}-name`}
          type="text"
          value={draft.name}
          onChange={set('name')}
          placeholder="any"
          spellCheck={false}
        />
      </div>
      <div className="field">
        <label htmlFor={`${id}-state`} className="field-label">
          State
        </label>
        <select id={`${id}-state`} value={draft.state} onChange={set('state')}>
          <option value="">any</option>
          {listedSagaStates.map((s) => (
            <option key={s} value={s}>
              {statusLabel(s)}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-since`} className="field-label">
          Started
        </label>
        <select id={`${id}-since`} value={draft.since} onChange={set('since')}>
          <option value="">any time</option>
          {(Object.keys(sinceMs) as Since[]).map((s) => (
            <option key={s} value={s}>
              {sinceLabels[s]}
            </option>
          ))}
        </select>
      </div>
      <div className="filter-buttons">
        <button type="submit" className="primary">
          Apply
        </button>
        <button type="button" onClick={() => onApply({})}>
          Clear
        </button>
      </div>
    </form>
  )
}

/** A page of the sagas the search selects. */
function SagasList({
  namespace,
  search,
  live,
  setLive,
}: {
  namespace: string
  search: SagasSearch
  live: boolean
  setLive: (live: boolean) => void
}) {
  const [pages, setPages] = usePages()
  const q = useSagas(namespace, { ...search }, () => toSagaFilter(search), pages.token, live)
  const runs = q.data?.runs ?? []
  const next = q.data?.next_page_token
  const filtered = describeSagaSearch(search)
  return (
    <section className="card" aria-labelledby="sagas-list-title">
      <div className="card-header">
        <h2 id="sagas-list-title">{filtered ? 'Sagas that match' : 'All sagas'}</h2>
        {filtered && <span className="muted">{filtered}</span>}
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
      <ErrorMessage error={q.error} title="Listing the sagas failed" />
      {q.isPending && <p className="muted">Loading sagas…</p>}
      {q.data &&
        (runs.length === 0 ? (
          <div className="empty">
            <p className="strong">{filtered ? 'No sagas match.' : `No sagas in namespace ${namespace} yet.`}</p>
            {!filtered && (
              <p>
                A saga is a workflow that runs package saga's steps: its runs carry the attributes {sagaAttr.name} and{' '}
                {sagaAttr.state}.
              </p>
            )}
          </div>
        ) : (
          <div className="table-wrap">
            <table className="table compact sagas-table">
              <thead>
                <tr>
                  <th scope="col">Saga</th>
                  <th scope="col">Name</th>
                  <th scope="col">State</th>
                  <th scope="col">Run status</th>
                  <th scope="col">Workflow type</th>
                  <th scope="col">Started</th>
                  <th scope="col">Closed</th>
                </tr>
              </thead>
              <tbody>
                {runs.map((r) => {
                  const a = r.attributes ?? {}
                  const state = listedState(r.status, a[sagaAttr.state])
                  return (
                    <tr key={r.run_id} data-saga={r.workflow_id} data-state={state ?? ''}>
                      <td>
                        <Link
                          to="/namespaces/$namespace/sagas/$id"
                          params={{ namespace, id: r.workflow_id }}
                          className="strong"
                        >
                          {r.workflow_id}
                        </Link>
                      </td>
                      <td>{a[sagaAttr.name] ?? <span className="muted">—</span>}</td>
                      <td>
                        <SagaStateBadge state={state} />
                      </td>
                      <td>
                        <StatusBadge status={r.status} />
                      </td>
                      <td className="mono">{r.workflow_type}</td>
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
