import { Link } from '@tanstack/react-router'
import { useState } from 'react'
import type { EventType, HistoryEvent, StepOptions } from '../../api/types'
import { failureText, FailureView } from '../../components/FailureView'
import { JsonView, PayloadView } from '../../components/JsonView'
import { Time } from '../../components/Time'
import { formatDuration, formatSetting } from '../../components/timeFormat'
import { plural } from '../../components/plural'

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
        <span className="muted">{plural(events.length, 'event')}</span>
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
  if (e.timer) parts.push(formatSetting(e.timer.duration))
  if (e.child) parts.push(`child ${e.child.options.workflow_id ?? ''}${e.child.status ? ` ${e.child.status}` : ''}`)
  if (e.target) parts.push(`→ ${e.target.workflow_id}`)
  if (e.attributes) parts.push(attributesText(e.attributes))
  if (e.reason) parts.push(`“${e.reason}”`)
  const f = failureText(e.failure)
  if (f) parts.push(f)
  return parts.join('  ')
}

function EventDetails({ event: e, namespace }: { event: HistoryEvent; namespace: string }) {
  const { start, child, target } = e
  const rest = Object.fromEntries(Object.entries({ recovery: e.recovery }).filter(([, v]) => v !== undefined))
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
      {e.step && (
        <div className="detail-block">
          <h3>Step options</h3>
          <StepOptionsView step={e.step} />
        </div>
      )}
      {e.timer && (
        <div className="detail-block">
          <h3>Timer</h3>
          <dl className="facts compact">
            <div>
              <dt>Duration</dt>
              <dd>{formatSetting(e.timer.duration)}</dd>
            </div>
            <div>
              <dt>Fires at</dt>
              <dd>
                <Time value={e.timer.fire_time} millis />
              </dd>
            </div>
          </dl>
        </div>
      )}
      {e.attributes && (
        <div className="detail-block">
          <h3>Attributes set</h3>
          <dl className="facts compact upserted">
            {Object.entries(e.attributes)
              .sort(([a], [b]) => a.localeCompare(b))
              .map(([k, v]) => (
                <div key={k}>
                  <dt className="mono">{k}</dt>
                  <dd>{v === '' ? <span className="muted">removed</span> : <span className="mono">{v}</span>}</dd>
                </div>
              ))}
          </dl>
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

/** What an AttributesUpserted event set: "region=eu, tier removed". */
function attributesText(attrs: Record<string, string>): string {
  return Object.entries(attrs)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => (v === '' ? `${k} removed` : `${k}=${v}`))
    .join(', ')
}

/** A step's options in words: its queue, its timeouts as durations ("5 s") and its retry policy. */
function StepOptionsView({ step }: { step: StepOptions }) {
  const r = step.retry
  const facts: [string, string][] = []
  if (step.queue) facts.push(['Queue', step.queue])
  if (step.priority) facts.push(['Priority', String(step.priority)])
  if (step.schedule_to_start) facts.push(['Schedule to start', formatSetting(step.schedule_to_start)])
  if (step.start_to_close) facts.push(['Start to close', formatSetting(step.start_to_close)])
  if (step.schedule_to_close) facts.push(['Schedule to close', formatSetting(step.schedule_to_close)])
  if (step.heartbeat) facts.push(['Heartbeat', formatSetting(step.heartbeat)])
  if (r?.initial_interval) facts.push(['Retry after', formatSetting(r.initial_interval)])
  if (r?.backoff_coefficient) facts.push(['Backoff coefficient', String(r.backoff_coefficient)])
  if (r?.maximum_interval) facts.push(['Longest retry interval', formatSetting(r.maximum_interval)])
  if (r?.maximum_attempts) facts.push(['Attempts at most', String(r.maximum_attempts)])
  if (r?.non_retryable_types?.length) facts.push(['Not retried on', r.non_retryable_types.join(', ')])
  if (facts.length === 0) return <p className="muted">The defaults.</p>
  return (
    <dl className="facts compact step-options">
      {facts.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  )
}

/** The start attributes but their memo, whose values are payloads shown apart. */
function withoutMemo({ memo: _, ...rest }: NonNullable<HistoryEvent['start']>) {
  return rest
}
