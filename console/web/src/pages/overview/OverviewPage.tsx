import { getRouteApi } from '@tanstack/react-router'
import { useMemo, useState, type ReactNode } from 'react'
import { ErrorMessage } from '../../components/ErrorMessage'
import { RefreshToggle } from '../../components/RefreshToggle'
import { Time } from '../../components/Time'
import { Activity } from './Activity'
import { countingSince, totals, type Totals } from './overview'
import { refreshMs, useOverview } from './queries'
import { FailingTypes, SlowestTypes } from './WorkflowTypes'

const route = getRouteApi('/namespaces/$namespace/overview')

/** What the engine did in a namespace in the last hour: runs per minute, totals, and the types worth a look. */
export function OverviewPage() {
  const { namespace } = route.useParams()
  const [live, setLive] = useState(true)
  const q = useOverview(namespace, live)
  const o = q.data
  const minutes = useMemo(() => o?.minutes ?? [], [o])
  const sum = useMemo(() => totals(minutes), [minutes])
  const since = o ? countingSince(o) : undefined

  return (
    <section className="page" aria-labelledby="overview-title">
      <div className="page-header">
        <h1 id="overview-title">Overview</h1>
        <span className="muted">namespace {namespace}, the last hour</span>
        <div className="spacer" />
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
      </div>
      <ErrorMessage error={q.error} title="Reading the overview failed" />
      {q.isPending && <p className="muted">Loading the overview…</p>}
      {o?.partial && (
        <div className="notice" role="status">
          <strong>Partial counts:</strong> a node of the cluster did not answer, so the runs of the shards it serves are
          missing.
        </div>
      )}
      {o && (
        <>
          <TotalsCard totals={sum} since={since} />
          <Activity minutes={minutes} totals={sum} since={since} />
          <div className="columns">
            <SlowestTypes namespace={namespace} types={o.types ?? []} />
            <FailingTypes namespace={namespace} types={o.types ?? []} />
          </div>
        </>
      )}
    </section>
  )
}

/** The hour's runs started, and closed by how they closed. */
function TotalsCard({ totals: t, since }: { totals: Totals; since: Date | undefined }) {
  return (
    <section className="card" aria-labelledby="totals-title">
      <div className="card-header">
        <h2 id="totals-title">Last hour</h2>
        {since && (
          <span className="muted small">
            counted since <Time value={since.toISOString()} />, when the server started: earlier minutes have no counts
          </span>
        )}
      </div>
      <dl className="facts compact totals">
        <Total term="Started" n={t.started} />
        <Total term="Completed" n={t.completed} tone="ok" />
        <Total term="Failed" n={t.failed} tone="bad" />
        <Total term="Timed out" n={t.timed_out} />
        <Total term="Canceled" n={t.canceled} />
        <Total term="Terminated" n={t.terminated} tone="bad" />
        <Total term="Continued as new" n={t.continued_as_new} />
      </dl>
      {Object.values(t).every((n) => n === 0) && (
        <p className="muted card-note">No run started or closed in this namespace in the last hour.</p>
      )}
    </section>
  )
}

function Total({ term, n, tone }: { term: ReactNode; n: number; tone?: 'ok' | 'bad' }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>
        <span className={`big${tone && n > 0 ? ` ${tone}` : ''}`}>{n.toLocaleString()}</span>
      </dd>
    </div>
  )
}
