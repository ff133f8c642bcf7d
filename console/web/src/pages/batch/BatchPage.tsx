import { getRouteApi, Link } from '@tanstack/react-router'
import { useState } from 'react'
import { ApiError } from '../../api/client'
import type { BatchDescription, BatchRunResult } from '../../api/types'
import { useAccess } from '../../components/access'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { ErrorMessage } from '../../components/ErrorMessage'
import { PayloadView } from '../../components/JsonView'
import { RefreshToggle } from '../../components/RefreshToggle'
import { Time } from '../../components/Time'
import { formatDuration, parseTime } from '../../components/timeFormat'
import { BatchState } from '../batches/BatchState'
import { describeFilter, operationLabels } from '../batches/describe'
import { progressMs, useBatch, useStopBatch } from '../batches/queries'
import { resetPointLabels } from '../run/resetPoints'
import { Fact } from '../../components/Fact'

const route = getRouteApi('/namespaces/$namespace/batches/$batchId')

/** One batch: what it does to which runs, how far it went, and a result per run. */
export function BatchPage() {
  const { namespace, batchId } = route.useParams()
  const [live, setLive] = useState(true)
  const [stopping, setStopping] = useState(false)
  const mayStop = useAccess().can(namespace, 'operator')
  const q = useBatch(namespace, batchId, live)
  const b = q.data
  return (
    <section className="page" aria-labelledby="batch-title">
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/namespaces/$namespace/batches" params={{ namespace }}>
          Batches
        </Link>
        <span aria-hidden="true"> / </span>
        <span>{batchId}</span>
      </nav>
      <div className="page-header">
        <h1 id="batch-title" className="run-title">
          {b ? `${operationLabels[b.request.operation]} batch` : 'Batch'}{' '}
          <span className="mono title-id">{batchId}</span>
        </h1>
        {b && <BatchState state={b.state} />}
        <div className="spacer" />
        {b?.state === 'running' && (
          <>
            <RefreshToggle
              live={live}
              onChange={setLive}
              every={progressMs / 1000}
              updatedAt={q.dataUpdatedAt}
              fetching={q.isFetching}
            />
            {mayStop && (
              <button type="button" className="danger" onClick={() => setStopping(true)}>
                Stop…
              </button>
            )}
          </>
        )}
      </div>
      {q.error instanceof ApiError && q.error.status === 404 && !b ? (
        <p className="empty">
          No batch <span className="mono">{batchId}</span> in namespace {namespace}.
        </p>
      ) : (
        <ErrorMessage error={q.error} title="Describing the batch failed" />
      )}
      {q.isPending && <p className="muted">Loading…</p>}
      {b && (
        <>
          <div className="columns">
            <Request batch={b} now={q.dataUpdatedAt} />
            <Progress batch={b} />
          </div>
          <Results batch={b} />
        </>
      )}
      {stopping && <StopDialog namespace={namespace} batchId={batchId} onClose={() => setStopping(false)} />}
    </section>
  )
}

/** What the batch was asked to do, to which runs, and when. */
function Request({ batch: b, now }: { batch: BatchDescription; now: number }) {
  const r = b.request
  const start = parseTime(b.start_time)
  const end = parseTime(b.close_time)?.getTime() ?? now
  return (
    <section className="card" aria-labelledby="request-title">
      <h2 id="request-title">Request</h2>
      <dl className="facts compact">
        <Fact term="Operation">{operationLabels[r.operation] ?? r.operation}</Fact>
        <Fact term="Runs">{describeFilter(r.filter) || 'every run of the namespace'}</Fact>
        {r.operation === 'signal' && <Fact term="Signal">{r.signal_name}</Fact>}
        {r.operation === 'reset' && (
          <Fact term="Reset to">
            {resetPointLabels[r.reset_point || 'last_workflow_task']}
            {r.reset_event_id ? ` ${r.reset_event_id}` : ''}
          </Fact>
        )}
        {r.reason && <Fact term="Reason">{r.reason}</Fact>}
        <Fact term="Rate">{r.rate || 50} runs a second</Fact>
        {r.identity && <Fact term="Started by">{r.identity}</Fact>}
        <Fact term="Started">
          <Time value={b.start_time} />
        </Fact>
        <Fact term="Closed">
          <Time value={b.close_time} />
        </Fact>
        <Fact term="Duration">
          {start ? formatDuration(end - start.getTime()) + (b.close_time ? '' : ' so far') : '—'}
        </Fact>
        {b.stopped_by && <Fact term="Stopped by">{b.stopped_by}</Fact>}
      </dl>
      {r.operation === 'signal' && r.signal_input !== undefined && (
        <>
          <h3>Signal value</h3>
          <PayloadView payload={r.signal_input} />
        </>
      )}
    </section>
  )
}

/** The runs acted on, split into those it succeeded and failed on. */
function Progress({ batch: b }: { batch: BatchDescription }) {
  return (
    <section className="card" aria-labelledby="progress-title">
      <h2 id="progress-title">Progress</h2>
      <dl className="facts totals">
        <Fact term="Done">
          <span className="big">{b.done.toLocaleString()}</span>
        </Fact>
        <Fact term="Succeeded">
          <span className="big ok">{b.succeeded.toLocaleString()}</span>
        </Fact>
        <Fact term="Failed">
          <span className={`big${b.failed > 0 ? ' bad' : ''}`}>{b.failed.toLocaleString()}</span>
        </Fact>
      </dl>
      <p className="muted small card-note">
        {b.state === 'running'
          ? 'The batch acts on the runs a few at a time; this page follows it every second.'
          : `The batch ${b.state === 'stopped' ? 'was stopped' : 'has ' + b.state}.`}
      </p>
    </section>
  )
}

/** A result per run (the failures first when there are many), each linking to its run. */
function Results({ batch: b }: { batch: BatchDescription }) {
  const results = b.results ?? []
  const reset = b.request.operation === 'reset'
  return (
    <section className="card" aria-labelledby="results-title">
      <div className="card-header">
        <h2 id="results-title">Results</h2>
        <span className="muted">
          {results.length < b.done ? `the last ${results.length} of ${b.done}` : `${results.length}`}
        </span>
      </div>
      {results.length === 0 ? (
        <p className="muted">No run acted on yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="table compact">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Result</th>
                {reset && <th scope="col">New run</th>}
              </tr>
            </thead>
            <tbody>
              {results.map((r) => (
                <ResultRow key={r.run_id} namespace={b.namespace} result={r} reset={reset} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

function ResultRow({ namespace, result: r, reset }: { namespace: string; result: BatchRunResult; reset: boolean }) {
  return (
    <tr>
      <td>
        <Link
          to="/namespaces/$namespace/runs/$workflowId/$runId"
          params={{ namespace, workflowId: r.workflow_id, runId: r.run_id }}
        >
          {r.workflow_id}
        </Link>
        <div className="mono small muted">{r.run_id}</div>
      </td>
      <td>
        {r.error ? (
          <span className="result-error">{r.error}</span>
        ) : (
          <span className="badge status-completed">Succeeded</span>
        )}
      </td>
      {reset && (
        <td>
          {r.new_run_id ? (
            <Link
              to="/namespaces/$namespace/runs/$workflowId/$runId"
              params={{ namespace, workflowId: r.workflow_id, runId: r.new_run_id }}
              className="mono"
            >
              {r.new_run_id}
            </Link>
          ) : (
            <span className="muted">—</span>
          )}
        </td>
      )}
    </tr>
  )
}

/** Stops the batch: the runs it acted on stay as they are. */
function StopDialog({ namespace, batchId, onClose }: { namespace: string; batchId: string; onClose: () => void }) {
  const stop = useStopBatch(namespace, batchId)
  return (
    <ConfirmDialog
      title="Stop the batch"
      description="The batch acts on no more runs. What it did to the runs it acted on stays."
      confirmLabel="Stop batch"
      danger
      pending={stop.isPending}
      error={stop.error}
      onClose={onClose}
      onConfirm={() => stop.mutate(undefined, { onSuccess: onClose })}
    />
  )
}
