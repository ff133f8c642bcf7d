import type { UseMutationResult } from '@tanstack/react-query'
import { useNavigate } from '@tanstack/react-router'
import { useState, type ReactNode } from 'react'
import { decodePayload } from '../../api/payload'
import { resetPoints, type Description, type HistoryEvent, type Payload, type ResetPoint } from '../../api/types'
import { newRequestId, type RunRef } from '../../api/workflows'
import { useAccess } from '../../components/access'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { useDocument } from '../../components/documents'
import { ErrorMessage } from '../../components/ErrorMessage'
import { PayloadView } from '../../components/JsonView'
import { formatNanos } from '../../components/timeFormat'
import {
  useCancel,
  usePause,
  useQueryRun,
  useRerun,
  useReset,
  useResume,
  useSignal,
  useStart,
  useTerminate,
} from './queries'
import { resetPointLabels } from './resetPoints'

type Action = 'signal' | 'query' | 'start' | 'pause' | 'resume' | 'reset' | 'rerun' | 'cancel' | 'terminate'

/**
 * The buttons that act on a run. Each opens a dialog that takes what the
 * action needs and confirms it; signal, pause or resume, cancel and
 * terminate are offered while the run runs, rerun once it has closed, start
 * again once its history (its start event) has loaded, reset always (the
 * server says when the run lacks the point). Each is offered only to who
 * may do it in the run's namespace: signal, query and start again to its
 * writers, the others to its operators.
 */
export function Actions({
  run,
  description,
  started,
}: {
  run: RunRef
  description: Description
  /** The run's WorkflowStarted event, when history has come. */
  started: HistoryEvent | undefined
}) {
  const [open, setOpen] = useState<Action | null>(null)
  const access = useAccess()
  // Signal, query and start need a writer of the namespace; what changes
  // the run's course, an operator. Without either, no buttons.
  const write = access.can(run.namespace, 'writer')
  const operate = access.can(run.namespace, 'operator')
  const running = description.status === 'running'
  const paused = description.paused !== undefined
  const close = () => setOpen(null)
  if (!write && !operate) return null
  return (
    <div className="actions" role="group" aria-label="Actions">
      {write && (
        <>
          <button type="button" onClick={() => setOpen('signal')} disabled={!running}>
            Signal…
          </button>
          <button type="button" onClick={() => setOpen('query')}>
            Query…
          </button>
          <button type="button" onClick={() => setOpen('start')} disabled={!started}>
            Start again…
          </button>
        </>
      )}
      {operate && (
        <>
          {paused ? (
            <button type="button" onClick={() => setOpen('resume')} disabled={!running}>
              Resume…
            </button>
          ) : (
            <button type="button" onClick={() => setOpen('pause')} disabled={!running}>
              Pause…
            </button>
          )}
          <button type="button" onClick={() => setOpen('reset')}>
            Reset…
          </button>
          <button type="button" onClick={() => setOpen('rerun')} disabled={running}>
            Rerun…
          </button>
          <button type="button" onClick={() => setOpen('cancel')} disabled={!running}>
            Cancel…
          </button>
          <button type="button" className="danger" onClick={() => setOpen('terminate')} disabled={!running}>
            Terminate…
          </button>
        </>
      )}
      {open === 'signal' && <SignalDialog run={run} onClose={close} />}
      {open === 'query' && <QueryDialog run={run} onClose={close} />}
      {open === 'start' && started && (
        <StartAgainDialog run={run} description={description} started={started} onClose={close} />
      )}
      {open === 'pause' && <PauseDialog run={run} onClose={close} />}
      {open === 'resume' && <ResumeDialog run={run} onClose={close} />}
      {open === 'reset' && <ResetDialog run={run} description={description} onClose={close} />}
      {open === 'rerun' && <RerunDialog run={run} description={description} onClose={close} />}
      {open === 'cancel' && <CancelDialog run={run} onClose={close} />}
      {open === 'terminate' && <TerminateDialog run={run} onClose={close} />}
    </div>
  )
}

interface DialogProps {
  run: RunRef
  onClose: () => void
}

/** Parses a JSON field: undefined when blank, an Error when not JSON. */
function parseJSON(text: string): Payload | Error {
  if (text.trim() === '') return undefined
  try {
    return JSON.parse(text) as Payload
  } catch (e) {
    return new Error(`Not valid JSON: ${(e as Error).message}`)
  }
}

/** A name and a JSON value, the fields of a signal and of a query. */
function NameAndValue(props: {
  name: string
  setName: (s: string) => void
  value: string
  setValue: (s: string) => void
  nameLabel: string
  valueLabel: string
}) {
  return (
    <>
      <label className="field">
        <span>{props.nameLabel}</span>
        <input
          type="text"
          required
          autoFocus
          value={props.name}
          onChange={(e) => props.setName(e.target.value)}
          spellCheck={false}
        />
      </label>
      <label className="field">
        <span>{props.valueLabel}</span>
        <textarea
          rows={6}
          className="mono"
          value={props.value}
          onChange={(e) => props.setValue(e.target.value)}
          placeholder='{"approved": true}'
          spellCheck={false}
        />
      </label>
    </>
  )
}

function SignalDialog({ run, onClose }: DialogProps) {
  const [name, setName] = useState('')
  const [value, setValue] = useState('')
  const [invalid, setInvalid] = useState<Error | null>(null)
  const signal = useSignal(run)
  return (
    <ConfirmDialog
      title="Send a signal"
      description={
        <>
          The run <strong>{run.workflowId}</strong> receives the signal with the JSON value as its input.
        </>
      }
      confirmLabel="Send signal"
      pending={signal.isPending}
      error={invalid ?? signal.error}
      onClose={onClose}
      onConfirm={() => {
        const input = parseJSON(value)
        setInvalid(input instanceof Error ? input : null)
        if (!(input instanceof Error)) signal.mutate({ name, input }, { onSuccess: onClose })
      }}
    >
      <NameAndValue
        name={name}
        setName={setName}
        value={value}
        setValue={setValue}
        nameLabel="Signal name"
        valueLabel="Value (JSON, optional)"
      />
    </ConfirmDialog>
  )
}

function QueryDialog({ run, onClose }: DialogProps) {
  const [name, setName] = useState('')
  const [value, setValue] = useState('')
  const [invalid, setInvalid] = useState<Error | null>(null)
  const query = useQueryRun(run)
  return (
    <ConfirmDialog
      title="Query the run"
      description="A worker answers from the run's state; the run does not change."
      confirmLabel="Run query"
      pending={query.isPending}
      error={invalid ?? query.error}
      onClose={onClose}
      onConfirm={() => {
        const input = parseJSON(value)
        setInvalid(input instanceof Error ? input : null)
        if (!(input instanceof Error)) query.mutate({ name, input })
      }}
    >
      <NameAndValue
        name={name}
        setName={setName}
        value={value}
        setValue={setValue}
        nameLabel="Query name"
        valueLabel="Arguments (JSON, optional)"
      />
      {query.isSuccess && (
        <div className="answer" aria-live="polite">
          <h3>Answer</h3>
          <PayloadView payload={query.data?.result} empty="no value" />
        </div>
      )}
    </ConfirmDialog>
  )
}

/**
 * Starts a new run of the run's workflow type with what the run started
 * with: its input (a document's value, read first), queue, priority, run
 * timeout, memo, business key and attributes, under a workflow id that is
 * the run's unless changed. The request id is the dialog's, so that a
 * confirm tried again after a call that failed starts one run at most. The
 * new run's page opens once it started.
 */
function StartAgainDialog({
  run,
  description: d,
  started,
  onClose,
}: DialogProps & { description: Description; started: HistoryEvent }) {
  const [workflowId, setWorkflowId] = useState(run.workflowId)
  const [requestId] = useState(newRequestId)
  const start = useStart(run.namespace)
  const navigate = useNavigate()
  const attrs = started.start ?? {}
  const queue = attrs.queue || d.queue
  // An input the run stored as a document is sent as the document's value.
  const p = decodePayload(started.payload)
  const stored = p.kind === 'document' ? p.id : undefined
  const doc = useDocument(run, stored ?? '', stored !== undefined)
  const input = stored === undefined ? started.payload : doc.data?.value
  const ready = stored === undefined || doc.data !== undefined
  return (
    <ConfirmDialog
      title="Start again"
      description={
        <>
          A new run of <strong>{d.workflow_type}</strong> starts with the input of this run, and its queue, memo,
          business key and attributes.
        </>
      }
      confirmLabel="Start run"
      pending={start.isPending}
      disabled={!ready}
      error={start.error}
      onClose={onClose}
      onConfirm={() =>
        start.mutate(
          {
            workflow_id: workflowId,
            workflow_type: d.workflow_type,
            input,
            queue,
            priority: attrs.priority,
            run_timeout: attrs.run_timeout,
            memo: attrs.memo ?? d.memo,
            business_key: attrs.business_key ?? d.business_key,
            attributes: attrs.attributes ?? d.attributes,
            request_id: requestId,
          },
          {
            onSuccess: ({ run_id }) => {
              onClose()
              void navigate({
                to: '/namespaces/$namespace/runs/$workflowId/$runId',
                params: { namespace: run.namespace, workflowId, runId: run_id },
              })
            },
          },
        )
      }
    >
      <label className="field">
        <span>Workflow ID</span>
        <input
          type="text"
          required
          autoFocus
          value={workflowId}
          onChange={(e) => setWorkflowId(e.target.value)}
          spellCheck={false}
          autoComplete="off"
        />
      </label>
      <dl className="facts compact">
        <div>
          <dt>Workflow type</dt>
          <dd>{d.workflow_type}</dd>
        </div>
        <div>
          <dt>Queue</dt>
          <dd>{queue}</dd>
        </div>
        {attrs.priority ? (
          <div>
            <dt>Priority</dt>
            <dd>{attrs.priority}</dd>
          </div>
        ) : null}
        {attrs.run_timeout ? (
          <div>
            <dt>Run timeout</dt>
            <dd>{formatNanos(attrs.run_timeout)}</dd>
          </div>
        ) : null}
      </dl>
      <div className="start-input">
        <h3>Input</h3>
        {ready ? (
          <PayloadView payload={input} empty="no input" />
        ) : doc.error && !doc.isFetching ? (
          <div className="document-error">
            <ErrorMessage error={doc.error} title="Reading the input failed" />
            <button type="button" className="small" onClick={() => void doc.refetch()}>
              Try again
            </button>
          </div>
        ) : (
          <p className="muted small" role="status">
            Reading the input, stored as a document…
          </p>
        )}
      </div>
    </ConfirmDialog>
  )
}

function CancelDialog({ run, onClose }: DialogProps) {
  const cancel = useCancel(run)
  return (
    <ReasonDialog
      title="Cancel the run"
      description={
        <>
          The workflow code of <strong>{run.workflowId}</strong> is told to cancel and decides how to wind down.
        </>
      }
      confirmLabel="Cancel run"
      danger
      reasonRequired={false}
      mutation={cancel}
      onClose={onClose}
    />
  )
}

function TerminateDialog({ run, onClose }: DialogProps) {
  const terminate = useTerminate(run)
  return (
    <ReasonDialog
      title="Terminate the run"
      description={
        <>
          <strong>{run.workflowId}</strong> closes at once, without running workflow code: what its steps did is not
          undone. This cannot be reversed.
        </>
      }
      confirmLabel="Terminate run"
      danger
      reasonRequired
      mutation={terminate}
      onClose={onClose}
    />
  )
}

function PauseDialog({ run, onClose }: DialogProps) {
  const pause = usePause(run)
  return (
    <ReasonDialog
      title="Pause the run"
      description={
        <>
          No workflow task or step of <strong>{run.workflowId}</strong> is dispatched until it is resumed. Steps running
          now finish, and timers fire into its history.
        </>
      }
      confirmLabel="Pause run"
      reasonRequired={false}
      mutation={pause}
      onClose={onClose}
    />
  )
}

function ResumeDialog({ run, onClose }: DialogProps) {
  const resume = useResume(run)
  return (
    <ReasonDialog
      title="Resume the run"
      description={
        <>
          <strong>{run.workflowId}</strong> goes on: what waited while it was paused is dispatched.
        </>
      }
      confirmLabel="Resume run"
      reasonRequired={false}
      mutation={resume}
      onClose={onClose}
    />
  )
}

/** Opens the page of a run of the workflow id that an action started. */
function useOpenRun(run: RunRef) {
  const navigate = useNavigate()
  return (runId: string) =>
    void navigate({
      to: '/namespaces/$namespace/runs/$workflowId/$runId',
      params: { namespace: run.namespace, workflowId: run.workflowId, runId },
    })
}

/**
 * Resets the run: a new run of its workflow id gets the history before
 * the point and runs the workflow task there again; the run, if open, is
 * terminated. Its page opens once it started.
 */
function ResetDialog({ run, description: d, onClose }: DialogProps & { description: Description }) {
  const [point, setPoint] = useState<ResetPoint>('last_workflow_task')
  const [eventId, setEventId] = useState('')
  const [signals, setSignals] = useState(true)
  const [reason, setReason] = useState('')
  const reset = useReset(run)
  const openRun = useOpenRun(run)
  const lastEvent = d.next_event_id - 1
  return (
    <ConfirmDialog
      title="Reset the run"
      description={
        <>
          A new run of <strong>{run.workflowId}</strong> starts with this run&apos;s history up to the point and runs
          the workflow task there again.
          {d.status === 'running' && ' This run is terminated.'}
        </>
      }
      confirmLabel="Reset run"
      danger={d.status === 'running'}
      pending={reset.isPending}
      error={reset.error}
      onClose={onClose}
      onConfirm={() =>
        reset.mutate(
          {
            point,
            event_id: point === 'before_event' ? Number(eventId) : undefined,
            skip_signals: !signals,
            reason,
          },
          {
            onSuccess: ({ run_id }) => {
              onClose()
              openRun(run_id)
            },
          },
        )
      }
    >
      <label className="field">
        <span>Reset to</span>
        <select autoFocus value={point} onChange={(e) => setPoint(e.target.value as ResetPoint)}>
          {resetPoints.map((p) => (
            <option key={p} value={p}>
              {resetPointLabels[p]}
            </option>
          ))}
        </select>
      </label>
      {point === 'before_event' && (
        <label className="field">
          <span>Event ID (1 to {lastEvent})</span>
          <input
            type="number"
            required
            min={1}
            max={lastEvent}
            step={1}
            value={eventId}
            onChange={(e) => setEventId(e.target.value)}
          />
        </label>
      )}
      <label className="check">
        <input type="checkbox" checked={signals} onChange={(e) => setSignals(e.target.checked)} />
        <span>Re-apply signals received after the point</span>
      </label>
      <label className="field">
        <span>Reason (optional)</span>
        <input type="text" value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
    </ConfirmDialog>
  )
}

/**
 * Starts the closed run again under its workflow id, with its type, input
 * and options. The request id is the dialog's, so that a confirm tried
 * again starts one run at most. The new run's page opens once it started.
 */
function RerunDialog({ run, description: d, onClose }: DialogProps & { description: Description }) {
  const [requestId] = useState(newRequestId)
  const rerun = useRerun(run)
  const openRun = useOpenRun(run)
  return (
    <ConfirmDialog
      title="Rerun"
      description={
        <>
          A new run of <strong>{run.workflowId}</strong> starts with the type ({d.workflow_type}), input and options of
          this run.
        </>
      }
      confirmLabel="Rerun"
      pending={rerun.isPending}
      error={rerun.error}
      onClose={onClose}
      onConfirm={() =>
        rerun.mutate(requestId, {
          onSuccess: ({ run_id }) => {
            onClose()
            openRun(run_id)
          },
        })
      }
    />
  )
}

/** The confirmation of an action that takes a reason. */
function ReasonDialog(props: {
  title: string
  description: ReactNode
  confirmLabel: string
  /** Styles the confirm button as destructive. */
  danger?: boolean
  reasonRequired: boolean
  mutation: UseMutationResult<void, Error, string>
  onClose: () => void
}) {
  const { mutation: m, onClose } = props
  const [reason, setReason] = useState('')
  return (
    <ConfirmDialog
      title={props.title}
      description={props.description}
      confirmLabel={props.confirmLabel}
      danger={props.danger}
      pending={m.isPending}
      error={m.error}
      onClose={onClose}
      onConfirm={() => m.mutate(reason, { onSuccess: onClose })}
    >
      <label className="field">
        <span>Reason{props.reasonRequired ? '' : ' (optional)'}</span>
        <input
          type="text"
          autoFocus
          required={props.reasonRequired}
          value={reason}
          onChange={(e) => setReason(e.target.value)}
        />
      </label>
    </ConfirmDialog>
  )
}
