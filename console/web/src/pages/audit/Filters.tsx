import { useState, type FormEvent } from 'react'
import { fromLocalInput, toLocalInput } from '../../components/timeFormat'
import type { AuditNamespaces } from './queries'
import type { AuditSearch } from './search'

interface FiltersProps {
  search: AuditSearch
  /** The namespace listed (undefined: every one). */
  namespace: string | undefined
  choices: AuditNamespaces
  onApply: (search: AuditSearch) => void
}

/**
 * The filter form: what it holds is a draft until applied, then it goes to
 * the URL. Key it by the search so that a change of the URL resets it. A
 * cluster admin may choose every namespace at once; anyone else one of the
 * namespaces they administer.
 */
export function Filters({ search, namespace, choices, onApply }: FiltersProps) {
  const [draft, setDraft] = useState({
    namespace: namespace ?? '',
    actor: search.actor ?? '',
    since: toLocalInput(search.since),
    until: toLocalInput(search.until),
  })
  const set = (k: keyof typeof draft) => (e: { target: { value: string } }) =>
    setDraft({ ...draft, [k]: e.target.value })
  // The namespace listed stays selectable while the list loads, or if it
  // is not in it.
  const names = [...(choices.names ?? [])]
  if (namespace && !names.includes(namespace)) names.unshift(namespace)

  const submit = (e: FormEvent) => {
    e.preventDefault()
    const next: AuditSearch = {}
    if (draft.namespace) next.namespace = draft.namespace
    if (draft.actor.trim()) next.actor = draft.actor.trim()
    if (draft.since) next.since = fromLocalInput(draft.since)
    if (draft.until) next.until = fromLocalInput(draft.until)
    onApply(next)
  }

  return (
    <form className="filters" onSubmit={submit} aria-label="Filter the audit log">
      <label className="field">
        <span>Namespace</span>
        <select value={draft.namespace} onChange={set('namespace')}>
          {choices.all && <option value="">All namespaces</option>}
          {names.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>Actor</span>
        <input type="text" value={draft.actor} onChange={set('actor')} placeholder="anyone" spellCheck={false} />
      </label>
      <label className="field">
        <span>Since</span>
        <input type="datetime-local" value={draft.since} onChange={set('since')} />
      </label>
      <label className="field">
        <span>Until</span>
        <input type="datetime-local" value={draft.until} onChange={set('until')} />
      </label>
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
