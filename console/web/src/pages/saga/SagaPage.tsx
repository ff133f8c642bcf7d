import { getRouteApi, Link } from '@tanstack/react-router'
import { useState } from 'react'
import { ApiError } from '../../api/client'
import { sagaLive, type SagaRecord } from '../../api/sagas'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Fact } from '../../components/Fact'
import { FailureView } from '../../components/FailureView'
import { RefreshToggle } from '../../components/RefreshToggle'
import { StatusBadge } from '../../components/StatusBadge'
import { Time } from '../../components/Time'
import { formatDuration, parseTime } from '../../components/timeFormat'
import { refreshMs, useSaga } from '../sagas/queries'
import { SagaStateBadge } from './badges'
import { OperatorActions } from './OperatorActions'
import { Decisions, Steps } from './Steps'
import { SagaTimeline } from './SagaTimeline'
import { Tryouts } from './Tryouts'

const route = getRouteApi('/namespaces/$namespace/sagas/$id')

/**
 * A saga as its run's history tells it: its state and facts, a line per
 * step with its forward run and compensation side by side, every tryout
 * as a table and a timeline, what an operator can do (decide a failed
 * compensation, disable, enable, terminate) and the decisions made
 * (refreshed while its run runs).
 */
export function SagaPage() {
  const { namespace, id } = route.useParams()
  // Deciding compensations, disabling, enabling and terminating are an operator's.
  const mayOperate = useAccess().can(namespace, 'operator')
  const [live, setLive] = useState(true)
  const q = useSaga(namespace, id, live)
  const saga = q.data
  return (
    <section className="page" aria-labelledby="saga-title">
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/namespaces/$namespace/sagas" params={{ namespace }}>
          Sagas
        </Link>
        <span aria-hidden="true"> / </span>
        <span>{id}</span>
      </nav>
      <div className="page-header">
        <h1 id="saga-title" className="run-title">
          {id}
        </h1>
        {saga && <SagaStateBadge state={saga.state} />}
        {saga && <span className="muted">saga {saga.name}</span>}
        <div className="spacer" />
        {saga && sagaLive(saga) && (
          <RefreshToggle
            live={live}
            onChange={setLive}
            every={refreshMs / 1000}
            updatedAt={q.dataUpdatedAt}
            fetching={q.isFetching}
          />
        )}
      </div>
      {q.error instanceof ApiError && q.error.status === 404 && !saga ? (
        <div className="empty">
          <p className="strong">
            No saga {id} in namespace {namespace}.
          </p>
          <p>{q.error.message}</p>
        </div>
      ) : (
        <ErrorMessage error={q.error} title="Reading the saga failed" />
      )}
      {q.isPending && <p className="muted">Loading the saga…</p>}
      {saga && (
        <>
          <Summary saga={saga} />
          <Steps saga={saga} />
          {mayOperate && <OperatorActions saga={saga} />}
          <Tryouts saga={saga} now={q.dataUpdatedAt || Date.now()} />
          <SagaTimeline saga={saga} now={q.dataUpdatedAt || Date.now()} />
          <Decisions saga={saga} />
        </>
      )}
    </section>
  )
}

function Summary({ saga }: { saga: SagaRecord }) {
  const started = parseTime(saga.started)
  const closed = parseTime(saga.closed)
  return (
    <section className="card" aria-labelledby="summary-title">
      <h2 id="summary-title">Summary</h2>
      <dl className="facts saga-summary">
        <Fact term="State">
          <SagaStateBadge state={saga.state} />
        </Fact>
        <Fact term="Name">{saga.name}</Fact>
        <Fact term="Run">
          <Link
            to="/namespaces/$namespace/runs/$workflowId/$runId"
            params={{ namespace: saga.namespace, workflowId: saga.id, runId: saga.run_id }}
            className="inline-link mono"
          >
            {saga.run_id}
          </Link>{' '}
          <StatusBadge status={saga.status} />
        </Fact>
        <Fact term="Transaction ID">
          <span className="mono wrap">{saga.transaction_id}</span>
        </Fact>
        <Fact term="Started">
          <Time value={saga.started} millis />
        </Fact>
        <Fact term="Closed">
          <Time value={saga.closed} millis />
        </Fact>
        <Fact term="Took">
          {started && closed ? formatDuration(closed.getTime() - started.getTime()) : <span className="muted">—</span>}
        </Fact>
        <Fact term="Steps">
          {saga.steps.length} step{saga.steps.length === 1 ? '' : 's'}, {saga.tryouts.length} tryout
          {saga.tryouts.length === 1 ? '' : 's'}
        </Fact>
        {saga.paused && (
          <Fact term="Disabled">
            <Time value={saga.paused.time} />
            {saga.paused.identity && <> by {saga.paused.identity}</>}
            {saga.paused.reason && <div className="small">{saga.paused.reason}</div>}
          </Fact>
        )}
      </dl>
      {saga.failure && (
        <>
          <h3>Failure</h3>
          <FailureView failure={saga.failure} />
        </>
      )}
    </section>
  )
}
