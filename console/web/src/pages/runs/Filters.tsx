import { useState, type FormEvent } from 'react'
import { fromLocalInput, toLocalInput } from '../../components/timeFormat'
import { defaultPageSize, pageSizes, parseAttr, type RunsSearch } from './search'

interface FiltersProps {
  search: RunsSearch
  onApply: (search: RunsSearch) => void
}

/**
 * The filter form: what it holds is a draft until applied, then it goes to
 * the URL. Key it by the search so that a change of the URL resets it.
 */
export function Filters({ search, onApply }: FiltersProps) {
  const [draft, setDraft] = useState({
    type: search.type ?? '',
    id: search.id ?? '',
    key: search.key ?? '',
    after: toLocalInput(search.after),
    before: toLocalInput(search.before),
    closedAfter: toLocalInput(search.closedAfter),
    closedBefore: toLocalInput(search.closedBefore),
    attr: search.attr ?? '',
  })
  const set = (k: keyof typeof draft) => (e: { target: { value: string } }) =>
    setDraft({ ...draft, [k]: e.target.value })

  const submit = (e: FormEvent) => {
    e.preventDefault()
    const next: RunsSearch = { status: search.status, size: search.size, system: search.system, sort: search.sort }
    if (draft.type.trim()) next.type = draft.type.trim()
    if (draft.id.trim()) next.id = draft.id.trim()
    if (draft.key.trim()) next.key = draft.key.trim()
    if (draft.after) next.after = fromLocalInput(draft.after)
    if (draft.before) next.before = fromLocalInput(draft.before)
    if (draft.closedAfter) next.closedAfter = fromLocalInput(draft.closedAfter)
    if (draft.closedBefore) next.closedBefore = fromLocalInput(draft.closedBefore)
    if (parseAttr(draft.attr.trim())) next.attr = draft.attr.trim()
    onApply(next)
  }

  return (
    <form className="filters" onSubmit={submit} aria-label="Filter runs">
      <label className="field">
        <span>Workflow type</span>
        <input type="text" value={draft.type} onChange={set('type')} placeholder="any" spellCheck={false} />
      </label>
      <label className="field">
        <span>Workflow ID</span>
        <input type="text" value={draft.id} onChange={set('id')} placeholder="starts with…" spellCheck={false} />
      </label>
      <label className="field">
        <span>Business key</span>
        <input type="text" value={draft.key} onChange={set('key')} placeholder="starts with…" spellCheck={false} />
      </label>
      <label className="field">
        <span>Started after</span>
        <input type="datetime-local" value={draft.after} onChange={set('after')} />
      </label>
      <label className="field">
        <span>Started before</span>
        <input type="datetime-local" value={draft.before} onChange={set('before')} />
      </label>
      <label className="field">
        <span>Closed after</span>
        <input type="datetime-local" value={draft.closedAfter} onChange={set('closedAfter')} />
      </label>
      <label className="field">
        <span>Closed before</span>
        <input type="datetime-local" value={draft.closedBefore} onChange={set('closedBefore')} />
      </label>
      <label className="field">
        <span>Attribute</span>
        <input
          type="text"
          value={draft.attr}
          onChange={set('attr')}
          placeholder="name=value"
          spellCheck={false}
          aria-invalid={draft.attr.trim() !== '' && !parseAttr(draft.attr.trim())}
        />
      </label>
      <label className="field">
        <span>Order</span>
        <select
          value={search.sort ?? 'newest'}
          onChange={(e) =>
            onApply({ ...search, page: undefined, sort: e.target.value === 'oldest' ? 'oldest' : undefined })
          }
        >
          <option value="newest">Newest start first</option>
          <option value="oldest">Oldest start first</option>
        </select>
      </label>
      <label className="field">
        <span>Per page</span>
        <select
          value={search.size ?? defaultPageSize}
          onChange={(e) => onApply({ ...search, page: undefined, size: Number(e.target.value) })}
        >
          {pageSizes.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
      <label className="check">
        <input
          type="checkbox"
          checked={search.system ?? false}
          onChange={(e) => onApply({ ...search, page: undefined, system: e.target.checked || undefined })}
        />
        <span>Show Strand's own runs (schedules, batches, mailboxes, human tasks)</span>
      </label>
      <div className="filter-buttons">
        <button type="submit" className="primary">
          Apply
        </button>
        <button type="button" onClick={() => onApply({ size: search.size, system: search.system })}>
          Clear
        </button>
      </div>
    </form>
  )
}
