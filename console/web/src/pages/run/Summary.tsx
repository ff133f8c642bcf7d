import { Link } from '@tanstack/react-router'
import { dagWorkflowType } from '../../api/dags'
import type { Description, HistoryEvent, PauseInfo } from '../../api/types'
import { Attributes } from '../../components/Attributes'
import { PayloadView } from '../../components/JsonView'
import { StatusBadge } from '../../components/StatusBadge'
import { Time } from '../../components/Time'
import { formatDuration, formatNanos, parseTime } from '../../components/timeFormat'
import { Fact } from '../../components/Fact'

interface SummaryProps {
  run: Description
  /** The run's WorkflowStarted event, when history has come. */
  started: HistoryEvent | undefined
  /** The run's WorkflowReset event, if it was reset from another run. */
  reset?: HistoryEvent | undefined
  now: number
}

/** What describe says of a run, with what its start event adds. */
export function Summary({ run, started, reset, now }: SummaryProps) {
  const start = parseTime(run.start_time)
  const close = parseTime(run.close_time)
  const attrs = started?.start
  const memo = Object.entries(run.memo ?? {}).sort(([a], [b]) => a.localeCompare(b))
  return (
    <section className="card" aria-labelledby="summary-title">
      <h2 id="summary-title">Summary</h2>
      {run.paused && <PausedNotice paused={run.paused} />}
      <dl className="facts">
        <Fact term="Status">
          <StatusBadge status={run.status} />
        </Fact>
        <Fact term="Type">
          {run.workflow_type}
          {run.workflow_type === dagWorkflowType && (
            <>
              {' '}
              <Link
                to="/dag-instances/$namespace/$workflowId"
                params={{ namespace: run.namespace, workflowId: run.workflow_id }}
                className="small inline-link"
              >
                DAG instance
              </Link>
            </>
          )}
        </Fact>
        <Fact term="Queue">{run.queue}</Fact>
        <Fact term="Run ID">
          <span className="mono">{run.run_id}</span>
        </Fact>
        <Fact term="Started">
          <Time value={run.start_time} millis />
        </Fact>
        <Fact term="Closed">
          <Time value={run.close_time} millis />
        </Fact>
        <Fact term="Duration">
          {start ? formatDuration((close?.getTime() ?? now) - start.getTime()) + (close ? '' : ' so far') : '—'}
        </Fact>
        <Fact term="Business key">{run.business_key ?? <span className="muted">—</span>}</Fact>
        {run.parent && (
          <Fact term="Parent">
            <Link
              to="/namespaces/$namespace/runs/$workflowId/$runId"
              params={{ namespace: run.parent.ns, workflowId: run.parent.wf, runId: run.parent.run }}
            >
              {run.parent.wf}
            </Link>
          </Fact>
        )}
        {attrs?.continued_from && (
          <Fact term="Continued from">
            <Link
              to="/namespaces/$namespace/runs/$workflowId/$runId"
              params={{ namespace: run.namespace, workflowId: run.workflow_id, runId: attrs.continued_from }}
              className="mono"
            >
              {attrs.continued_from}
            </Link>
          </Fact>
        )}
        {reset?.target?.run_id && (
          <Fact term="Reset from">
            <Link
              to="/namespaces/$namespace/runs/$workflowId/$runId"
              params={{
                namespace: reset.target.namespace || run.namespace,
                workflowId: reset.target.workflow_id,
                runId: reset.target.run_id,
              }}
              className="mono"
            >
              {reset.target.run_id}
            </Link>
          </Fact>
        )}
        {attrs?.priority ? <Fact term="Priority">{attrs.priority}</Fact> : null}
        {attrs?.run_timeout ? <Fact term="Run timeout">{formatNanos(attrs.run_timeout)}</Fact> : null}
        <Fact term="Events">{run.next_event_id - 1}</Fact>
        <Fact term="Attributes">
          <Attributes attrs={run.attributes} />
        </Fact>
      </dl>
      {memo.length > 0 && (
        <>
          <h3>Memo</h3>
          <dl className="memo">
            {memo.map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>
                  <PayloadView payload={v} />
                </dd>
              </div>
            ))}
          </dl>
        </>
      )}
    </section>
  )
}

/** Says that an operator holds the run paused: who, since when and why. */
function PausedNotice({ paused }: { paused: PauseInfo }) {
  return (
    <p className="notice summary-notice">
      <strong>Paused</strong> by {paused.identity || 'an operator'} at <Time value={paused.time} />
      {paused.reason ? `: ${paused.reason}` : ''}. No workflow task or step is dispatched until it is resumed.
    </p>
  )
}
