import { getRouteApi, Link } from '@tanstack/react-router'
import { useMemo, useState } from 'react'
import { ApiError } from '../../api/client'
import type { RunRef } from '../../api/workflows'
import { DocumentRun } from '../../components/documents'
import { ErrorMessage } from '../../components/ErrorMessage'
import { FailureView } from '../../components/FailureView'
import { RefreshToggle } from '../../components/RefreshToggle'
import { StatusBadge } from '../../components/StatusBadge'
import { parseTime } from '../../components/timeFormat'
import { Actions } from './Actions'
import { buildGantt } from './gantt'
import { History } from './History'
import { NoWorker } from './NoWorker'
import { Outcome } from './Outcome'
import { Pending } from './Pending'
import { refreshMs, useDescription, useHistory } from './queries'
import { Summary } from './Summary'
import { Timeline } from './Timeline'

const route = getRouteApi('/namespaces/$namespace/runs/$workflowId/$runId')

/** One run: summary, input and result, pending work, timeline, history and actions. */
export function RunPage() {
  const { namespace, workflowId, runId } = route.useParams()
  const run: RunRef = useMemo(() => ({ namespace, workflowId, runId }), [namespace, workflowId, runId])
  const [live, setLive] = useState(true)
  const desc = useDescription(run, live)
  const history = useHistory(run, desc.data?.next_event_id)
  const d = desc.data
  const events = history.data
  const started = events?.find((e) => e.type === 'WorkflowStarted')
  const reset = events?.find((e) => e.type === 'WorkflowReset')
  // Open bars run to the run's close, or to the time of the last refresh.
  const end = parseTime(d?.close_time)?.getTime() ?? desc.dataUpdatedAt
  const gantt = useMemo(() => buildGantt(events ?? [], d?.pending_steps ?? [], end), [events, d?.pending_steps, end])

  return (
    // The payloads shown are the run's: those stored as documents load from it.
    <DocumentRun value={run}>
      <section className="page" aria-labelledby="run-title">
        <nav aria-label="Breadcrumb" className="breadcrumb">
          <Link to="/namespaces/$namespace/runs" params={{ namespace }}>
            Runs
          </Link>
          <span aria-hidden="true"> / </span>
          <span>{workflowId}</span>
        </nav>
        <div className="page-header">
          <h1 id="run-title" className="run-title">
            {workflowId}
          </h1>
          {d && <StatusBadge status={d.status} />}
          <div className="spacer" />
          {d?.status === 'running' && (
            <RefreshToggle
              live={live}
              onChange={setLive}
              every={refreshMs / 1000}
              updatedAt={desc.dataUpdatedAt}
              fetching={desc.isFetching || history.isFetching}
            />
          )}
          {d && <Actions run={run} description={d} started={started} />}
        </div>
        {desc.error instanceof ApiError && desc.error.status === 404 && !d ? (
          <p className="empty">
            No run <span className="mono">{runId}</span> of <strong>{workflowId}</strong> in namespace {namespace}: it
            may have been removed after its retention.
          </p>
        ) : (
          <ErrorMessage error={desc.error} title="Describing the run failed" />
        )}
        {d?.workflow_task_failure && (
          <div className="alert" role="alert">
            <strong>The run is stuck:</strong> its last workflow task failed, and it waits for a worker that can replay
            it.
            <FailureView failure={d.workflow_task_failure} />
          </div>
        )}
        {d && <NoWorker run={d} now={desc.dataUpdatedAt} />}
        {d && <Summary run={d} started={started} reset={reset} now={desc.dataUpdatedAt} />}
        <ErrorMessage error={history.error} title="Reading the history failed" />
        {events && (
          <>
            <Outcome events={events} namespace={namespace} />
            {d && <Pending run={d} />}
            <Timeline gantt={gantt} />
            <History events={events} namespace={namespace} />
          </>
        )}
        {(desc.isPending || (d && history.isPending)) && <p className="muted">Loading…</p>}
      </section>
    </DocumentRun>
  )
}
