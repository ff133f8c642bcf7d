import { useQueryClient } from '@tanstack/react-query'
import { Link } from '@tanstack/react-router'
import { useEffect } from 'react'
import type { BatchRef } from '../../api/types'
import { ErrorMessage } from '../../components/ErrorMessage'
import { operationLabels, runsText } from '../batches/describe'
import { progressText } from '../batches/BatchState'
import { useBatch } from '../batches/queries'
import { runsKeys } from './queries'

/**
 * The progress of the batch the runs page started, read every second until
 * it has closed; then the runs list refreshes, to show what it did.
 */
export function BatchNotice({
  batch,
  expected,
  onDismiss,
}: {
  batch: BatchRef
  /** The runs the filter matched when it started. */
  expected: number | undefined
  onDismiss: () => void
}) {
  const q = useBatch(batch.namespace, batch.batch_id)
  const b = q.data
  const closed = b !== undefined && b.state !== 'running'
  const qc = useQueryClient()
  useEffect(() => {
    if (closed) void qc.invalidateQueries({ queryKey: runsKeys.all(batch.namespace) })
  }, [closed, qc, batch.namespace])
  return (
    <div className={`notice batch-notice${closed && b.failed === 0 ? ' done' : ''}`}>
      <p role="status">
        {b ? (
          <>
            <strong>
              {operationLabels[b.request.operation]} batch {closed ? b.state : 'running'}:
            </strong>{' '}
            {progressText(b)}
            {!closed && expected !== undefined && <> of about {runsText(expected)}</>}.{' '}
          </>
        ) : (
          'Batch started. '
        )}
        <Link
          to="/namespaces/$namespace/batches/$batchId"
          params={{ namespace: batch.namespace, batchId: batch.batch_id }}
        >
          See the batch
        </Link>
      </p>
      <ErrorMessage error={q.error} title="Reading the batch failed" />
      <button type="button" className="small" onClick={onDismiss} aria-label="Dismiss the batch's progress">
        Dismiss
      </button>
    </div>
  )
}
