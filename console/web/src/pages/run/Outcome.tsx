import { Link } from '@tanstack/react-router'
import type { HistoryEvent } from '../../api/types'
import { FailureView } from '../../components/FailureView'
import { PayloadView } from '../../components/JsonView'

/** The event types that close a run. */
const closing = new Set<HistoryEvent['type']>([
  'WorkflowCompleted',
  'WorkflowFailed',
  'WorkflowCanceled',
  'WorkflowTerminated',
  'WorkflowTimedOut',
  'WorkflowContinuedAsNew',
])

/** The run's input (from its start event) and how it closed (from its close event). */
export function Outcome({ events, namespace }: { events: HistoryEvent[]; namespace: string }) {
  const started = events.find((e) => e.type === 'WorkflowStarted')
  const closed = events.findLast((e) => closing.has(e.type))
  return (
    <div className="columns">
      <section className="card" aria-labelledby="input-title">
        <h2 id="input-title">Input</h2>
        <PayloadView payload={started?.payload} />
      </section>
      <section className="card" aria-labelledby="result-title">
        <h2 id="result-title">Result</h2>
        {closed ? <Closed event={closed} namespace={namespace} /> : <p className="muted">Not closed yet.</p>}
      </section>
    </div>
  )
}

function Closed({ event: e, namespace }: { event: HistoryEvent; namespace: string }) {
  switch (e.type) {
    case 'WorkflowCompleted':
      return <PayloadView payload={e.payload} empty="completed without a result" />
    case 'WorkflowContinuedAsNew':
      return (
        <>
          <p>
            Continued as new
            {e.target?.run_id && (
              <>
                {' in run '}
                <Link
                  to="/namespaces/$namespace/runs/$workflowId/$runId"
                  params={{ namespace, workflowId: e.target.workflow_id, runId: e.target.run_id }}
                  className="mono"
                >
                  {e.target.run_id}
                </Link>
              </>
            )}
            , with input:
          </p>
          <PayloadView payload={e.payload} />
        </>
      )
    default:
      return (
        <>
          <p>
            {e.type.replace(/^Workflow/, '')}
            {e.reason && <>: {e.reason}</>}
            {e.identity && <span className="muted"> (by {e.identity})</span>}
          </p>
          {e.failure && <FailureView failure={e.failure} />}
        </>
      )
  }
}
