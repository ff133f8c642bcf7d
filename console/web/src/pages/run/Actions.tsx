import type { UseMutationResult } from '@tanstack/react-query'
import { useState, type ReactNode } from 'react'
import type { Payload, RunStatus } from '../../api/types'
import type { RunRef } from '../../api/workflows'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { PayloadView } from '../../components/JsonView'
import { useCancel, useQueryRun, useSignal, useTerminate } from './queries'

type Action = 'signal' | 'query' | 'cancel' | 'terminate'

/**
 * The buttons that act on a run. Each opens a dialog that takes what the
 * action needs and confirms it; signal, cancel and terminate are offered
 * while the run runs.
 */
export function Actions({ run, status }: { run: RunRef; status: RunStatus }) {
  const [open, setOpen] = useState<Action | null>(null)
  const running = status === 'running'
  const close = () => setOpen(null)
  return (
    <div className="actions" role="group" aria-label="Actions">
      <button type="button" onClick={() => setOpen('signal')} disabled={!running}>
        Signal…
      </button>
      <button type="button" onClick={() => setOpen('query')}>
        Query…
      </button>
      <button type="button" onClick={() => setOpen('cancel')} disabled={!running}>
        Cancel…
      </button>
      <button type="button" className="danger" onClick={() => setOpen('terminate')} disabled={!running}>
        Terminate…
      </button>
      {open === 'signal' && <SignalDialog run={run} onClose={close} />}
      {open === 'query' && <QueryDialog run={run} onClose={close} />}
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
      reasonRequired
      mutation={terminate}
      onClose={onClose}
    />
  )
}

/** The confirmation of an action that takes a reason. */
function ReasonDialog(props: {
  title: string
  description: ReactNode
  confirmLabel: string
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
      danger
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
