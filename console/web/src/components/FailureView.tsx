import type { Failure } from '../api/types'
import { PayloadView } from './JsonView'

/** A failure and its causes on one line. */
export function failureText(f: Failure | undefined): string | undefined {
  if (!f) return undefined
  const parts: string[] = []
  for (let c: Failure | undefined = f; c; c = c.cause) {
    const m = c.type ? `${c.type}: ${c.message}` : c.message
    if (!parts.some((p) => p.includes(c!.message))) parts.push(m)
  }
  return parts.join(' ← ')
}

/** A failure: its kind, type and message, then its details and causes. */
export function FailureView({ failure }: { failure: Failure }) {
  return (
    <div className="failure">
      <div className="failure-head">
        <span className="tag tag-bad">{failure.kind}</span>
        {failure.type && <code>{failure.type}</code>}
        {failure.non_retryable && <span className="tag">non-retryable</span>}
      </div>
      <div className="failure-message">{failure.message}</div>
      {(failure.step || failure.workflow_id) && (
        <div className="muted small">
          {failure.step && `step ${failure.step} #${failure.seq ?? '?'}, attempt ${failure.attempt ?? '?'}`}
          {failure.workflow_id && `workflow ${failure.workflow_id}${failure.run_id ? ` / ${failure.run_id}` : ''}`}
        </div>
      )}
      {failure.details !== undefined && <PayloadView payload={failure.details} />}
      {failure.cause && (
        <div className="failure-cause">
          <div className="muted small">caused by</div>
          <FailureView failure={failure.cause} />
        </div>
      )}
    </div>
  )
}
