import { getRouteApi } from '@tanstack/react-router'
import { useState } from 'react'
import { ErrorMessage } from '../../components/ErrorMessage'
import { RefreshToggle } from '../../components/RefreshToggle'
import { pollingNow, refreshMs, useQueues, type QueueGroup } from './queries'
import { QueuesTable } from './QueuesTable'

const route = getRouteApi('/namespaces/$namespace/queues')

/** The task queues of a namespace: backlog, how tasks met workers, and the workers polling. */
export function QueuesPage() {
  const { namespace } = route.useParams()
  const [live, setLive] = useState(true)
  const q = useQueues(namespace, live)

  return (
    <section className="page" aria-labelledby="queues-title">
      <div className="page-header">
        <h1 id="queues-title">Queues</h1>
        <span className="muted">namespace {namespace}</span>
        <div className="spacer" />
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
      </div>
      <ErrorMessage error={q.error} title="Listing the queues failed" />
      {q.isPending && <p className="muted">Loading queues…</p>}
      {q.data?.partial && (
        <div className="notice" role="status">
          <strong>Partial list:</strong> a node of the cluster did not answer, so its workers and the backlogs of the
          shards it serves are missing.
        </div>
      )}
      {q.data &&
        (q.data.groups.length > 0 ? (
          <>
            <Summary groups={q.data.groups} />
            <QueuesTable groups={q.data.groups} updatedAt={q.dataUpdatedAt} />
            <p className="muted small card-note">
              The backlog is the tasks waiting now. The sync match counts the tasks since the server started (in a
              cluster, each node since its own start): those handed straight to a waiting worker, and those that waited
              in the backlog first. Workers are listed for 5 minutes after their last poll.
            </p>
          </>
        ) : (
          <div className="empty">
            <p className="strong">No worker has polled this namespace since the server started.</p>
            <p>
              A queue shows here once a worker polls it or a task waits in it. Start a worker for namespace{' '}
              <code>{namespace}</code>, or a run: its tasks wait in its queue until a worker polls it.
            </p>
          </div>
        ))}
    </section>
  )
}

/** Counts over every queue: queues, waiting tasks, workers seen and polling. */
function Summary({ groups }: { groups: QueueGroup[] }) {
  const queues = groups.flatMap((g) => g.kinds)
  const backlog = queues.reduce((n, q) => n + q.backlog, 0)
  const seen = new Set<string>()
  const polling = new Set<string>()
  for (const q of queues) {
    for (const p of q.pollers ?? []) {
      const key = `${p.identity}\u0000${p.node ?? ''}`
      seen.add(key)
      if (p.polling) polling.add(key)
    }
  }
  const starved = queues.filter((q) => q.backlog > 0 && pollingNow(q.pollers) === 0).length
  const workflow = queues.filter((q) => q.kind === 'workflow').length
  return (
    <section className="card" aria-labelledby="queues-summary-title">
      <h2 id="queues-summary-title" className="visually-hidden">
        Summary
      </h2>
      <dl className="facts compact queue-facts">
        <div>
          <dt>Queues</dt>
          <dd>
            <span className="big">{groups.length}</span>{' '}
            <span className="muted">
              {workflow} for workflow tasks, {queues.length - workflow} for step tasks
            </span>
          </dd>
        </div>
        <div>
          <dt>Tasks waiting</dt>
          <dd>
            <span className="big">{backlog.toLocaleString()}</span>
            {starved > 0 && (
              <span className="muted">
                {' '}
                ({starved} queue{starved === 1 ? '' : 's'} without a worker polling)
              </span>
            )}
          </dd>
        </div>
        <div>
          <dt>Workers seen</dt>
          <dd>
            <span className="big">{seen.size}</span> <span className="muted">in the last 5 minutes</span>
          </dd>
        </div>
        <div>
          <dt>Polling now</dt>
          <dd>
            <span className="big">{polling.size}</span>
          </dd>
        </div>
      </dl>
    </section>
  )
}
