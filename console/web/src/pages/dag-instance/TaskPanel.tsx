import { Link } from '@tanstack/react-router'
import { useEffect, useRef, useState } from 'react'
import { ApiError } from '../../api/client'
import { stderrPrefix, type DagInstanceRef, type DagTask, type DagTaskInstance } from '../../api/dags'
import { DagStateBadge } from '../../components/DagStateBadge'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Time } from '../../components/Time'
import { formatDuration, parseTime } from '../../components/timeFormat'
import { ParamsList } from '../dag/Definition'
import { useTaskLog } from './queries'
import { Fact } from '../../components/Fact'

/** Task types whose tasks run on a worker of their group. */
const workerTypes = new Set(['shell', 'http', 'sql', 'step'])

/** A log's text, each stderr line marked (its prefix kept, in the colour of errors). */
function LogText({ text }: { text: string }) {
  if (!text) return <>(empty)</>
  const lines = text.split(/(?<=\n)/)
  return (
    <>
      {lines.map((l, i) =>
        l.startsWith(stderrPrefix) ? (
          <span key={i} className="stderr">
            {l}
          </span>
        ) : (
          l
        ),
      )}
    </>
  )
}

/**
 * A task of an instance, beside the graph: its state, attempt, host and
 * times, its outputs and error, its log (refreshed while it runs), and its
 * parameters.
 */
export function TaskPanel(props: {
  instanceRef: DagInstanceRef
  task: DagTask
  instance: DagTaskInstance | undefined
  /** The instance's parameters, as resolved. */
  params: Record<string, string> | undefined
  live: boolean
  onClose: () => void
}) {
  const { instanceRef, task, instance: t, params, live, onClose } = props
  const ran = !!t?.start_time && !task.forbidden
  const running = t?.state === 'running'
  const attempts = t?.attempts ?? []
  // The attempt whose log shows: 0 is the last, whichever it is.
  const [chosen, setChosen] = useState(0)
  useEffect(() => setChosen(0), [task.name])
  const shown = chosen || attempts.length
  const shownAttempt = attempts.find((a) => a.attempt === shown)
  const log = useTaskLog(
    instanceRef,
    task.name,
    chosen,
    ran,
    live && (chosen ? shownAttempt?.state === 'running' : running),
  )
  const heading = useRef<HTMLHeadingElement>(null)
  // The panel takes focus when it opens, so that a keyboard goes on from it.
  useEffect(() => heading.current?.focus(), [])
  const start = parseTime(t?.start_time)
  const end = parseTime(t?.end_time)
  const outputs = Object.entries(t?.outputs ?? {}).sort(([a], [b]) => a.localeCompare(b))
  const local = Object.entries(task.local_params ?? {}).sort(([a], [b]) => a.localeCompare(b))
  const noLog = log.error instanceof ApiError && log.error.status === 404
  return (
    <aside className="task-panel" aria-labelledby="task-panel-title" data-task={task.name}>
      <div className="task-panel-header">
        <h3 id="task-panel-title" ref={heading} tabIndex={-1}>
          Task {task.name}
        </h3>
        <DagStateBadge state={t?.state} />
        <div className="spacer" />
        <button type="button" className="small" onClick={onClose} aria-label={`Close the panel of ${task.name}`}>
          Close
        </button>
      </div>
      <dl className="facts compact">
        <Fact term="Type">{task.type}</Fact>
        <Fact term="Attempt">
          {/* The instance may not say which attempt ran: the log does. */}
          {t?.attempt || log.data?.attempt || '—'}
          {task.retries ? <span className="muted"> of {task.retries + 1}</span> : null}
        </Fact>
        <Fact term="Host">{t?.host || <span className="muted">—</span>}</Fact>
        {t?.pid ? <Fact term="PID">{t.pid}</Fact> : null}
        <Fact term="Submitted">
          <Time value={t?.submit_time} millis />
        </Fact>
        <Fact term="Started">
          <Time value={t?.start_time} millis />
        </Fact>
        <Fact term="Ended">
          <Time value={t?.end_time} millis />
        </Fact>
        <Fact term="Took">{start && end ? formatDuration(end.getTime() - start.getTime()) : '—'}</Fact>
        {task.forbidden && <Fact term="Forbidden">skipped; its dependants run</Fact>}
        {t?.child && (
          <Fact term="Sub-process">
            <Link
              to="/dag-instances/$namespace/$workflowId"
              params={{ namespace: instanceRef.namespace, workflowId: t.child }}
            >
              {t.child}
            </Link>
          </Fact>
        )}
        {t?.branch?.length ? <Fact term="Branch taken">{t.branch.join(', ')}</Fact> : null}
        {t?.warned && <Fact term="Timeout">warned</Fact>}
      </dl>
      {t?.error && (
        <>
          <h4>Error</h4>
          <pre className="task-error">{t.error}</pre>
        </>
      )}
      <h4>Outputs</h4>
      <ParamsList params={outputs} empty="No outputs." />
      <div className="task-log-header">
        <h4 id="task-log-title">Log</h4>
        {log.data && (
          <span className="muted small">
            {log.data.attempt > 0 &&
              `attempt ${log.data.attempt}${(log.data.attempts ?? 0) > 1 ? ` of ${log.data.attempts}` : ''}${
                log.data.state && log.data.state !== 'running' ? ` (${log.data.state})` : ''
              }, `}
            {log.data.size.toLocaleString()} bytes
            {/* The log of a task that ended no longer runs, whatever its last record says. */}
            {log.data.running && running ? ', running: the end of it so far' : ''}
            {log.data.skipped ? `, the first ${log.data.skipped.toLocaleString()} bytes left out` : ''}
          </span>
        )}
      </div>
      {attempts.length > 1 && (
        <div className="attempt-picker" role="group" aria-label="The attempt whose log shows">
          {attempts.map((a) => (
            <button
              key={a.attempt}
              type="button"
              className="small"
              data-state={a.state}
              aria-pressed={a.attempt === shown}
              onClick={() => setChosen(a.attempt === attempts.length ? 0 : a.attempt)}
              title={a.error || a.state}
            >
              Attempt {a.attempt} ({a.state})
            </button>
          ))}
        </div>
      )}
      {chosen > 0 && shownAttempt?.error && (
        <pre className="attempt-error">{`attempt ${shownAttempt.attempt}: ${shownAttempt.error}`}</pre>
      )}
      {!ran ? (
        <p className="muted small">No log: the task has not run.</p>
      ) : noLog ? (
        <p className="muted small">
          {workerTypes.has(task.type)
            ? 'No log: the task has not run on a worker.'
            : 'No log: the instance kept none for this task.'}
        </p>
      ) : (
        <>
          <ErrorMessage error={log.error} title="Reading the log failed" />
          {log.isPending && <p className="muted small">Loading the log…</p>}
          {log.data && (
            <pre className="task-log" tabIndex={0} aria-labelledby="task-log-title">
              <LogText text={log.data.log} />
            </pre>
          )}
        </>
      )}
      <h4>Local parameters</h4>
      <ParamsList params={local} empty="None: the task sees the instance's parameters." />
      {params && Object.keys(params).length > 0 && (
        <details className="task-params">
          <summary>Instance parameters</summary>
          <ParamsList params={Object.entries(params).sort(([a], [b]) => a.localeCompare(b))} empty="" />
        </details>
      )}
    </aside>
  )
}
