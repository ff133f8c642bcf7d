import { Link } from '@tanstack/react-router'
import { useState } from 'react'
import type { EventType, HistoryEvent } from '../../api/types'
import { failureText, FailureView } from '../../components/FailureView'
import { JsonView, PayloadView } from '../../components/JsonView'
import { Time } from '../../components/Time'
import { formatDuration, formatNanos } from '../../components/timeFormat'

/** Events drawn at first, and added by each "show more". */
const chunk = 500

/** The run's history as a timeline; each event opens to show its details. */
export function History({ events, namespace }: { events: HistoryEvent[]; namespace: string }) {
  const [open, setOpen] = useState<ReadonlySet<number>>(new Set())
  const [shown, setShown] = useState(chunk)
  const first = events[0] ? Date.parse(events[0].time) : 0
  const toggle = (id: number, isOpen: boolean) =>
    setOpen((s) => {
      if (s.has(id) === isOpen) return s
      const next = new Set(s)
      if (isOpen) next.add(id)
      else next.delete(id)
      return next
    })
  const visible = events.slice(0, shown)
  return (
    <section className="card" aria-labelledby="history-title">
      <div className="card-header">
        <h2 id="history-title">History</h2>
        <span className="muted">{events.length} events</span>
        <div className="spacer" />
        <button type="button" className="small" onClick={() => setOpen(new Set(visible.map((e) => e.id)))}>
          Expand all
        </button>
        <button type="button" className="small" onClick={() => setOpen(new Set())}>
          Collapse all
        </button>
      </div>
      <ol className="timeline">
        {visible.map((e) => (
          <li key={e.id} className={`event ${tone(e.type)}`}>
            <details open={open.has(e.id)} onToggle={(ev) => toggle(e.id, ev.currentTarget.open)}>
              <summary>
                <span className="event-id">{e.id}</span>
                <span className="event-offset" title={e.time}>
                  +{formatDuration(Date.parse(e.time) - first)}
                </span>
                <span className="event-type">{e.type}</span>
                <span className="event-what">{what(e)}</span>
                {e.details && e.details.length > 0 && (
                  <span className="tag" title={e.details.map((d) => d.name).join(', ')}>
                    {e.details.length === 1 ? '1 audit detail' : `${e.details.length} audit details`}
                  </span>
                )}
              </summary>
              <EventDetails event={e} namespace={namespace} />
            </details>
          </li>
        ))}
      </ol>
      {events.length > shown && (
        <button type="button" onClick={() => setShown(shown + chunk)}>
          Show {Math.min(chunk, events.length - shown)} more of {events.length - shown}
        </button>
      )}
    </section>
  )
}

/** The color family of an event type. */
function tone(t: EventType): string {
  switch (t) {
    case 'StepAttemptFailed':
    case 'StepFailed':
    case 'StepTimedOut':
    case 'ChildStartFailed':
    case 'WorkflowFailed':
    case 'WorkflowTaskFailed':
    case 'WorkflowTimedOut':
    case 'WorkflowTerminated':
      return 'tone-bad'
    case 'StepCompleted':
    case 'WorkflowCompleted':
      return 'tone-ok'
    case 'SignalReceived':
    case 'CancelRequested':
    case 'WorkflowStarted':
    case 'TimerFired':
    case 'ChildClosed':
    case 'WorkflowPaused':
    case 'WorkflowResumed':
    case 'WorkflowReset':
      return 'tone-info'
    case 'WorkflowTaskCompleted':
      return 'tone-quiet'
    default:
      return 'tone-neutral'
  }
}

/** The one-line gist of an event after its type. */
function what(e: HistoryEvent): string {
  const parts: string[] = []
  if (e.name) parts.push(e.name)
  if (e.seq) parts.push(`#${e.seq}`)
  if (e.attempt) parts.push(`attempt ${e.attempt}`)
  if (e.timer) parts.push(`${formatNanos(e.timer.duration)}`)
  if (e.child) parts.push(`child ${e.child.options.workflow_id ?? ''}${e.child.status ? ` ${e.child.status}` : ''}`)
  if (e.target) parts.push(`→ ${e.target.workflow_id}`)
  if (e.reason) parts.push(`“${e.reason}”`)
  const f = failureText(e.failure)
  if (f) parts.push(f)
  return parts.join('  ')
}

function EventDetails({ event: e, namespace }: { event: HistoryEvent; namespace: string }) {
  const { start, child, target } = e
  const rest = Object.fromEntries(
    Object.entries({ step: e.step, timer: e.timer, recovery: e.recovery }).filter(([, v]) => v !== undefined),
  )
  const childRun = child?.run_id && child.options.workflow_id
  return (
    <div className="event-details">
      <dl className="facts compact">
        <div>
          <dt>Time</dt>
          <dd>
            <Time value={e.time} millis />
          </dd>
        </div>
        {e.identity && (
          <div>
            <dt>Identity</dt>
            <dd>{e.identity}</dd>
          </div>
        )}
        {childRun && (
          <div>
            <dt>Child run</dt>
            <dd>
              <Link
                to="/namespaces/$namespace/runs/$workflowId/$runId"
                params={{ namespace: child.options.namespace || namespace, workflowId: childRun, runId: child.run_id! }}
              >
                {childRun}
              </Link>
            </dd>
          </div>
        )}
        {target && (
          <div>
            <dt>Target</dt>
            <dd>
              {target.run_id ? (
                <Link
                  to="/namespaces/$namespace/runs/$workflowId/$runId"
                  params={{
                    namespace: target.namespace || namespace,
                    workflowId: target.workflow_id,
                    runId: target.run_id,
                  }}
                >
                  {target.workflow_id}
                </Link>
              ) : (
                target.workflow_id
              )}
              {target.run_id && <span className="mono muted"> {target.run_id}</span>}
            </dd>
          </div>
        )}
      </dl>
      {e.payload !== undefined && (
        <div className="detail-block">
          <h3>Payload</h3>
          <PayloadView payload={e.payload} />
        </div>
      )}
      {e.failure && (
        <div className="detail-block">
          <h3>Failure</h3>
          <FailureView failure={e.failure} />
        </div>
      )}
      {e.details && e.details.length > 0 && (
        <div className="detail-block">
          <h3>Audit details</h3>
          {e.details.map((d) => (
            <div key={d.name}>
              <h4 className="audit-detail-name">{d.name}</h4>
              <PayloadView payload={d.value} />
            </div>
          ))}
        </div>
      )}
      {start && (
        <div className="detail-block">
          <h3>Start</h3>
          <JsonView value={withoutMemo(start)} />
          {start.memo &&
            Object.entries(start.memo).map(([k, v]) => (
              <div key={k}>
                <h5>memo {k}</h5>
                <PayloadView payload={v} />
              </div>
            ))}
        </div>
      )}
      {child && (
        <div className="detail-block">
          <h3>Child</h3>
          <JsonView value={child} />
        </div>
      )}
      {Object.keys(rest).length > 0 && (
        <div className="detail-block">
          <h3>Attributes</h3>
          <JsonView value={rest} />
        </div>
      )}
    </div>
  )
}

/** The start attributes but their memo, whose values are payloads shown apart. */
function withoutMemo({ memo: _, ...rest }: NonNullable<HistoryEvent['start']>) {
  return rest
}
