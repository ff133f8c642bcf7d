import { useQuery } from '@tanstack/react-query'
import { Fragment } from 'react'
import { getQuotas, type Quotas } from '../../api/access'
import { ApiError } from '../../api/client'
import { formatBytes } from '../../components/JsonView'

/** A namespace's quotas, read for its row of the namespaces page. */
function useQuotas(namespace: string) {
  return useQuery({
    queryKey: ['quotas', namespace],
    queryFn: ({ signal }) => getQuotas(namespace, signal),
    staleTime: 60_000,
  })
}

const noBound = 'no bound'

/** Each bound of a namespace's quotas: starts per second (and burst), open runs, payload size. */
export function quotaLines(q: Quotas): [string, string][] {
  const rate = q.starts_per_second
    ? `${q.starts_per_second.toLocaleString()}/s` + (q.start_burst ? ` (burst ${q.start_burst.toLocaleString()})` : '')
    : noBound
  return [
    ['Starts', rate],
    ['Open runs', q.open_runs ? q.open_runs.toLocaleString() : noBound],
    ['Payload', q.max_payload ? formatBytes(q.max_payload) : noBound],
  ]
}

/** The quotas of a namespace, in its row: each bound or "no bound". */
export function QuotasCell({ namespace }: { namespace: string }) {
  const q = useQuotas(namespace)
  if (q.isPending) return <span className="muted">…</span>
  if (q.error) {
    // A server whose engine keeps no quotas has no such route.
    const none = q.error instanceof ApiError && q.error.status === 404
    return (
      <span className="muted" title={none ? undefined : q.error.message}>
        {none ? '—' : 'unknown'}
      </span>
    )
  }
  return (
    <dl className="quotas">
      {quotaLines(q.data).map(([term, value]) => (
        <Fragment key={term}>
          <dt>{term}</dt>
          <dd className={value === noBound ? 'muted' : undefined}>{value}</dd>
        </Fragment>
      ))}
    </dl>
  )
}
