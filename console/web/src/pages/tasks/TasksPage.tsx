import { getRouteApi, Link } from '@tanstack/react-router'
import { useState } from 'react'
import type { TaskSummary } from '../../api/tasks'
import { ErrorMessage } from '../../components/ErrorMessage'
import { RefreshToggle } from '../../components/RefreshToggle'
import { Time } from '../../components/Time'
import { refreshMs, useTasks } from './queries'

const route = getRouteApi('/namespaces/$namespace/tasks')

/** Who may do a task, on one line. */
export function candidatesText(c: { users?: string[]; groups?: string[] }): string {
  return [...(c.users ?? []), ...(c.groups ?? []).map((g) => `group ${g}`)].join(', ') || '—'
}

/** The human tasks inbox: the user's tasks (all of them, for the namespace's admins), highest priority first. */
export function TasksPage() {
  const { namespace } = route.useParams()
  const search = route.useSearch()
  const navigate = route.useNavigate()
  const [live, setLive] = useState(true)
  const q = useTasks(namespace, search, live)
  const tasks = q.data?.tasks ?? []
  return (
    <section className="page" aria-labelledby="tasks-title">
      <div className="page-header">
        <h1 id="tasks-title">Tasks</h1>
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
      <div className="filters">
        <label>
          Status{' '}
          <select
            value={search.status ?? ''}
            onChange={(e) => void navigate({ search: { ...search, status: e.target.value || undefined } })}
          >
            <option value="">open and claimed</option>
            <option value="claimed">claimed</option>
            <option value="closed">closed</option>
          </select>
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={!!search.mine}
            onChange={(e) => void navigate({ search: { ...search, mine: e.target.checked || undefined } })}
          />{' '}
          Only mine
        </label>
      </div>
      <ErrorMessage error={q.error} title="Listing tasks failed" />
      {q.isPending && <p className="muted">Loading tasks…</p>}
      {q.data &&
        (tasks.length > 0 ? (
          <TaskTable namespace={namespace} tasks={tasks} />
        ) : (
          <div className="empty">
            <p className="strong">No tasks here.</p>
            <p>
              A run asks people with <code>workflow.HumanTask</code>; its task shows here for the users and groups it
              names.
            </p>
          </div>
        ))}
    </section>
  )
}

function TaskTable({ namespace, tasks }: { namespace: string; tasks: TaskSummary[] }) {
  const now = Date.now()
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Task</th>
            <th scope="col">Status</th>
            <th scope="col">Assignee</th>
            <th scope="col">For</th>
            <th scope="col" className="num">
              Priority
            </th>
            <th scope="col">Due</th>
            <th scope="col">Asked by</th>
          </tr>
        </thead>
        <tbody>
          {tasks.map((t) => (
            <tr key={t.task_id}>
              <td>
                <Link
                  to="/namespaces/$namespace/tasks/$taskId"
                  params={{ namespace, taskId: t.task_id }}
                  className="strong"
                >
                  {t.title || t.task_id}
                </Link>
              </td>
              <td>{t.status}</td>
              <td>{t.assignee || '—'}</td>
              <td>{candidatesText(t.candidates)}</td>
              <td className="num">{t.priority || 3}</td>
              <td>
                {t.due_at ? (
                  <>
                    <Time value={t.due_at} />
                    {Date.parse(t.due_at) < now && t.status !== 'completed' && <span className="strong"> overdue</span>}
                  </>
                ) : (
                  '—'
                )}
              </td>
              <td className="mono">{t.parent_workflow_type || t.parent.workflow_id}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
