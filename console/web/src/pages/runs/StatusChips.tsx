import { Link } from '@tanstack/react-router'
import type { RunStatus } from '../../api/types'
import { runStatuses } from '../../api/types'
import { ErrorMessage } from '../../components/ErrorMessage'
import { statusLabel } from '../../components/StatusBadge'
import type { RunsSearch } from './search'

interface StatusChipsProps {
  namespace: string
  search: RunsSearch
  counts: Record<RunStatus, number | undefined>
  error: unknown
}

/** The number of runs in each status; each chip filters by its status. */
export function StatusChips({ namespace, search, counts, error }: StatusChipsProps) {
  const known = runStatuses.map((s) => counts[s])
  const total = known.every((n) => n !== undefined) ? known.reduce((a: number, n) => a + (n ?? 0), 0) : undefined
  const chip = (status: RunStatus | undefined, label: string, n: number | undefined) => (
    <li key={label}>
      <Link
        to="/namespaces/$namespace/runs"
        params={{ namespace }}
        search={{ ...search, status, page: undefined }}
        className={`chip${status ? ` chip-${status}` : ''}`}
        // Exact: the chip of the status the URL names is the current one.
        activeOptions={{ exact: true }}
      >
        {label}{' '}
        <span className={`chip-count${n === 0 ? ' zero' : ''}`}>
          {n === undefined ? (error ? '—' : '…') : n.toLocaleString()}
        </span>
      </Link>
    </li>
  )
  return (
    <nav aria-label="Runs by status">
      <ul className="chips">
        {chip(undefined, 'All', total)}
        {runStatuses.map((s) => chip(s, statusLabel(s), counts[s]))}
      </ul>
      <ErrorMessage error={error} title="Counting runs failed" />
    </nav>
  )
}
