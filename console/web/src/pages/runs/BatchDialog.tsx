import { useState } from 'react'
import { ApiError } from '../../api/client'
import {
  batchOperations,
  resetPoints,
  type BatchOperation,
  type BatchRef,
  type ListRequest,
  type Payload,
  type ResetPoint,
  type StartBatchRequest,
} from '../../api/types'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { FormField } from '../../components/FormField'
import { describeFilter, destructive, operationLabels, runsText } from '../batches/describe'
import { useStartBatch } from '../batches/queries'
import { resetPointLabels } from '../run/resetPoints'

/** What each operation does to a run, said under the select. */
const operationHints: Record<BatchOperation, string> = {
  signal: 'Each run receives the signal, with the value as its input.',
  cancel: 'Each run is asked to cancel, and its code decides how to wind down.',
  terminate: 'Each run closes at once, without running its code. This cannot be undone.',
  reset: 'Each run is replaced by a new run that continues from the reset point.',
  pause: 'No workflow task or step of each run is dispatched until it is resumed.',
  resume: 'Each paused run goes on.',
}

/**
 * Starts a batch operation on every run the runs page's filter matches
 * (its status chip included), as a durable job on the server. count is the
 * number of runs it matches now, as the page counted them.
 */
export function BatchDialog({
  namespace,
  filter,
  count,
  onClose,
  onStarted,
}: {
  namespace: string
  filter: ListRequest
  count: number | undefined
  onClose: () => void
  onStarted: (batch: BatchRef) => void
}) {
  const [operation, setOperation] = useState<BatchOperation>('signal')
  const [signalName, setSignalName] = useState('')
  const [signalValue, setSignalValue] = useState('')
  const [point, setPoint] = useState<ResetPoint>('last_workflow_task')
  const [eventId, setEventId] = useState('')
  const [reason, setReason] = useState('')
  const [rate, setRate] = useState('')
  const [invalid, setInvalid] = useState<{ field: 'value' | 'rate'; error: Error } | null>(null)
  const start = useStartBatch(namespace)
  const where = describeFilter(filter)
  const apiField = start.error instanceof ApiError ? start.error.body.field : undefined
  const fieldError = (name: string, local?: 'value' | 'rate') =>
    (local && invalid?.field === local ? invalid.error : undefined) ?? (apiField === name ? start.error : undefined)
  const known = ['signal_name', 'signal_input', 'reset_event_id', 'reason', 'rate']

  const confirm = () => {
    let input: Payload
    if (operation === 'signal' && signalValue.trim() !== '') {
      try {
        input = JSON.parse(signalValue) as Payload
      } catch (e) {
        setInvalid({ field: 'value', error: new Error(`Not valid JSON: ${(e as Error).message}`) })
        return
      }
    }
    const perSecond = rate.trim() === '' ? undefined : Number(rate)
    if (perSecond !== undefined && !(perSecond > 0)) {
      setInvalid({ field: 'rate', error: new Error('Enter a number of runs a second above 0, or nothing.') })
      return
    }
    setInvalid(null)
    const req: StartBatchRequest = { filter, operation, reason: reason.trim() || undefined, rate: perSecond }
    if (operation === 'signal') {
      req.signal_name = signalName.trim()
      req.signal_input = input
    }
    if (operation === 'reset') {
      req.reset_point = point
      if (point === 'before_event') req.reset_event_id = Number(eventId)
    }
    start.mutate(req, {
      onSuccess: (ref) => {
        onStarted(ref)
        onClose()
      },
    })
  }

  return (
    <ConfirmDialog
      title="Batch operation"
      description={
        <>
          Acts on every run the filter matches, as a job on the server that goes on if you leave this page:{' '}
          <strong>{count === undefined ? 'the runs' : runsText(count)}</strong> now
          {where ? <> ({where})</> : null}. Runs that start to match while it runs are included.
        </>
      }
      confirmLabel={`${operationLabels[operation]} ${count === undefined ? 'the runs' : runsText(count)}`}
      danger={destructive.has(operation)}
      pending={start.isPending}
      error={apiField && known.includes(apiField) ? undefined : start.error}
      onClose={onClose}
      onConfirm={confirm}
    >
      {!where && (
        <p className="notice">
          <strong>No filter:</strong> every run of the namespace matches, the runs that carry its schedules among them.
          Filter the runs first to act on fewer.
        </p>
      )}
      <FormField label="Operation" hint={operationHints[operation]}>
        {(p) => (
          <select {...p} autoFocus value={operation} onChange={(e) => setOperation(e.target.value as BatchOperation)}>
            {batchOperations.map((o) => (
              <option key={o} value={o}>
                {operationLabels[o]}
              </option>
            ))}
          </select>
        )}
      </FormField>
      {operation === 'signal' && (
        <div className="form-row">
          <FormField label="Signal name" error={fieldError('signal_name')}>
            {(p) => (
              <input
                {...p}
                type="text"
                required
                value={signalName}
                onChange={(e) => setSignalName(e.target.value)}
                spellCheck={false}
              />
            )}
          </FormField>
          <FormField label="Value (JSON, optional)" error={fieldError('signal_input', 'value')}>
            {(p) => (
              <input
                {...p}
                type="text"
                className="mono"
                value={signalValue}
                onChange={(e) => setSignalValue(e.target.value)}
                placeholder='"ada"'
                spellCheck={false}
              />
            )}
          </FormField>
        </div>
      )}
      {operation === 'reset' && (
        <div className="form-row">
          <FormField label="Reset to">
            {(p) => (
              <select {...p} value={point} onChange={(e) => setPoint(e.target.value as ResetPoint)}>
                {resetPoints.map((rp) => (
                  <option key={rp} value={rp}>
                    {resetPointLabels[rp]}
                  </option>
                ))}
              </select>
            )}
          </FormField>
          {point === 'before_event' && (
            <FormField label="Event ID" error={fieldError('reset_event_id')}>
              {(p) => (
                <input
                  {...p}
                  type="number"
                  required
                  min={1}
                  step={1}
                  value={eventId}
                  onChange={(e) => setEventId(e.target.value)}
                />
              )}
            </FormField>
          )}
        </div>
      )}
      <div className="form-row">
        {operation !== 'signal' && (
          <FormField label="Reason (optional)" error={fieldError('reason')}>
            {(p) => <input {...p} type="text" value={reason} onChange={(e) => setReason(e.target.value)} />}
          </FormField>
        )}
        <FormField label="Rate (runs a second)" error={fieldError('rate', 'rate')} hint="50 when blank.">
          {(p) => (
            <input
              {...p}
              type="number"
              min={0}
              step="any"
              value={rate}
              onChange={(e) => setRate(e.target.value)}
              placeholder="50"
            />
          )}
        </FormField>
      </div>
    </ConfirmDialog>
  )
}
