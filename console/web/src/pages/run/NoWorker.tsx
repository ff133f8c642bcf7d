import { Link } from '@tanstack/react-router'
import type { Description, QueueInfo } from '../../api/types'
import { Time } from '../../components/Time'
import { useQueues } from '../queues/queries'

/** How long a worker may go without polling before the page says no worker polls (a task can take a while). */
const quietMs = 60_000

/** The latest time a worker polled q, and whether one polls now. */
function polled(q: QueueInfo | undefined): { now: boolean; last: string | undefined } {
  const pollers = q?.pollers ?? []
  const last = pollers
    .map((p) => p.last_seen)
    .sort()
    .at(-1)
  return { now: pollers.some((p) => p.polling), last }
}

/**
 * Warns that no worker polls the queue an open run's workflow tasks go to
 * (none seen lately): the run makes no progress until one starts. Read
 * from the namespace's queues, as the queues page shows them; says
 * nothing while they load, fail, or miss a node's answer.
 */
export function NoWorker({ run, now }: { run: Description; now: number }) {
  const open = run.status === 'running'
  const q = useQueues(run.namespace, open)
  if (!open || !q.data || q.data.partial) return null
  const queue = q.data.groups.find((g) => g.name === run.queue)?.kinds.find((k) => k.kind === 'workflow')
  const { now: polling, last } = polled(queue)
  if (polling || (last && now - Date.parse(last) < quietMs)) return null
  return (
    <div className="notice no-worker" role="status">
      <strong>
        No worker is polling queue <span className="mono">{run.queue}</span>; this run waits until one starts.
      </strong>{' '}
      {last ? (
        <>
          A worker last polled it at <Time value={last} />.{' '}
        </>
      ) : null}
      <Link to="/namespaces/$namespace/queues" params={{ namespace: run.namespace }} className="inline-link">
        See the queues
      </Link>
    </div>
  )
}
