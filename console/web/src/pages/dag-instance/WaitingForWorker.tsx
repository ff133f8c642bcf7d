import type { DagDefinition, DagTaskInstance } from '../../api/dags'
import { type QueueGroup, useQueues } from '../queues/queries'

/** Where tasks wait for a worker: a worker group's queue (or a step task's own queue), with the tasks. */
interface Waiting {
  queue: string
  /** The worker group; empty for a step task's queue. */
  group: string
  tasks: string[]
}

/** Whether a worker polled the step queue lately (the kernel lists the pollers of the last five minutes). */
function polled(groups: QueueGroup[], queue: string): boolean {
  const q = groups.find((g) => g.name === queue)?.kinds.find((k) => k.kind === 'step')
  return (q?.pollers ?? []).length > 0
}

function byQueue(list: { task: string; queue: string; group: string }[]): Waiting[] {
  const out = new Map<string, Waiting>()
  for (const { task, queue, group } of list) {
    const w = out.get(queue) ?? { queue, group, tasks: [] }
    w.tasks.push(task)
    out.set(queue, w)
  }
  return [...out.values()]
}

function where(w: Waiting) {
  return w.group ? (
    <>
      worker group <span className="mono">{w.group}</span>
    </>
  ) : (
    <>
      task queue <span className="mono">{w.queue}</span>
    </>
  )
}

function names(tasks: string[]) {
  return tasks.map((t, i) => (
    <span key={t}>
      {i > 0 && ', '}
      <span className="mono">{t}</span>
    </span>
  ))
}

/**
 * The submitted tasks of a running instance: each waits for a worker of its
 * group; when no worker polled the group lately, says so (the task waits
 * until one starts, or until its fail timeout). Read from the namespace's
 * queues, as the queues page shows them; says nothing of workers while
 * they load, fail, or miss a node's answer.
 */
export function WaitingForWorker(props: { namespace: string; tasks: DagTaskInstance[]; live: boolean }) {
  const waiting = byQueue(
    props.tasks
      .filter((t) => t.state === 'submitted' && t.queue)
      .map((t) => ({ task: t.name, queue: t.queue ?? '', group: t.worker_group ?? '' })),
  )
  const q = useQueues(props.namespace, props.live && waiting.length > 0)
  if (waiting.length === 0) return null
  const known = q.data && !q.data.partial ? q.data.groups : undefined
  return (
    <div className="notice waiting-for-worker" role="status">
      {waiting.map((w) => {
        const none = known && !polled(known, w.queue)
        return (
          <p key={w.queue} data-queue={w.queue} data-no-worker={none ? 'true' : undefined}>
            {w.tasks.length === 1 ? 'Task ' : 'Tasks '}
            {names(w.tasks)} {w.tasks.length === 1 ? 'is' : 'are'} submitted, waiting for a worker of {where(w)}.
            {none && (
              <>
                {' '}
                <strong>
                  No worker polls {w.group ? 'group' : 'queue'} <span className="mono">{w.group || w.queue}</span>
                </strong>
                {w.group ? (
                  <>
                    : start one with <code>strand worker --group {w.group}</code>
                  </>
                ) : null}
                ; until then the task waits (or fails at its timeout).
              </>
            )}
          </p>
        )
      })}
    </div>
  )
}

/** The types of tasks the instance's interpreter runs itself, not a worker of a group. */
const notOnQueue = new Set(['sub_process', 'conditions', 'switch', 'dependent'])

/**
 * A DAG's worker groups that no worker of the namespace polled lately: the
 * tasks of each would wait for one when the DAG runs.
 */
export function GroupsWithoutWorker({ namespace, definition }: { namespace: string; definition: DagDefinition }) {
  const q = useQueues(namespace, false)
  if (!q.data || q.data.partial) return null
  const groups = q.data.groups
  const wanted = byQueue(
    definition.tasks
      .filter((t) => !notOnQueue.has(t.type) && !t.forbidden)
      .map((t) => {
        if (t.type === 'step') return { task: t.name, queue: (t.queue as string | undefined) || 'default', group: '' }
        const group = t.worker_group || definition.worker_group || 'default'
        return { task: t.name, queue: `dag.${group}`, group }
      }),
  ).filter((w) => !polled(groups, w.queue))
  if (wanted.length === 0) return null
  return (
    <div className="notice no-worker" role="status">
      {wanted.map((w) => (
        <p key={w.queue} data-queue={w.queue}>
          <strong>
            No worker polls {where(w)} in namespace {namespace}
          </strong>
          : {w.tasks.length === 1 ? 'task ' : 'tasks '}
          {names(w.tasks)} {w.tasks.length === 1 ? 'waits' : 'wait'} for one when the DAG runs
          {w.group ? (
            <>
              {' '}
              (start one with <code>strand worker --group {w.group}</code>)
            </>
          ) : null}
          .
        </p>
      ))}
    </div>
  )
}
