import { getRouteApi, Link } from '@tanstack/react-router'
import { lazy, Suspense, useState } from 'react'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Fact } from '../../components/Fact'
import { JsonView } from '../../components/JsonView'
import { Time } from '../../components/Time'
import { candidatesText } from '../tasks/TasksPage'
import { useActOnTask, useTask } from '../tasks/queries'

const TaskForm = lazy(() => import('./TaskForm'))

const route = getRouteApi('/namespaces/$namespace/tasks/$taskId')

/** One human task: what it asks, its form (drawn from its JSON Schema), the actions and the record. */
export function TaskPage() {
  const { namespace, taskId } = route.useParams()
  const access = useAccess()
  const q = useTask(namespace, taskId)
  const act = useActOnTask(namespace, taskId, access.name)
  const [delegateTo, setDelegateTo] = useState('')
  const [comment, setComment] = useState('')
  const t = q.data
  const holder = t?.status === 'claimed' && (t.assignee === access.name || !access.accessControl)
  const outcomes = t?.options.outcomes?.length ? t.options.outcomes : ['done']
  return (
    <section className="page" aria-labelledby="task-title">
      {/* The way back to the inbox. */}
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/namespaces/$namespace/tasks" params={{ namespace }}>
          Tasks
        </Link>
        <span aria-hidden="true"> / </span>
        <span>{t?.options.title || taskId}</span>
      </nav>
      <div className="page-header">
        <h1 id="task-title">{t?.options.title || 'Task'}</h1>
      </div>
      <ErrorMessage error={q.error} title="Reading the task failed" />
      {q.isPending && <p className="muted">Loading the task…</p>}
      {t && (
        <>
          <section className="card" aria-labelledby="task-facts-title">
            <h2 id="task-facts-title">Task</h2>
            {t.options.description && <p>{t.options.description}</p>}
            <dl className="facts compact">
              <Fact term="Status">{t.status}</Fact>
              <Fact term="Assignee">{t.assignee || '—'}</Fact>
              <Fact term="For">{candidatesText(t.candidates)}</Fact>
              <Fact term="Priority">{t.options.priority || 3}</Fact>
              <Fact term="Created">
                <Time value={t.created} />
              </Fact>
              {t.due_at && (
                <Fact term="Due">
                  <Time value={t.due_at} />
                </Fact>
              )}
              <Fact term="Asked by">
                <Link
                  to="/namespaces/$namespace/runs/$workflowId/$runId"
                  params={{ namespace, workflowId: t.parent.workflow_id, runId: t.parent.run_id ?? '' }}
                  className="mono"
                >
                  {t.parent.workflow_id}
                </Link>{' '}
                ({t.parent_workflow_type})
              </Fact>
            </dl>
            {t.options.data !== undefined && (
              <>
                <h3>Data</h3>
                <JsonView value={t.options.data} />
              </>
            )}
          </section>
          <ErrorMessage error={act.error} title="The action was refused" />
          {!t.outcome && (
            <section className="card" aria-labelledby="task-actions-title">
              <h2 id="task-actions-title">Actions</h2>
              <div className="actions">
                {t.status === 'open' && (
                  <button
                    type="button"
                    className="primary"
                    disabled={act.isPending}
                    onClick={() => act.mutate({ action: 'claim' })}
                  >
                    Claim
                  </button>
                )}
                {holder && (
                  <button type="button" disabled={act.isPending} onClick={() => act.mutate({ action: 'release' })}>
                    Release
                  </button>
                )}
              </div>
              {holder && (
                <form
                  className="inline-form"
                  onSubmit={(e) => {
                    e.preventDefault()
                    if (delegateTo.trim()) act.mutate({ action: 'delegate', to: delegateTo.trim() })
                  }}
                >
                  <label>
                    Delegate to <input value={delegateTo} onChange={(e) => setDelegateTo(e.target.value)} />
                  </label>
                  <button type="submit" disabled={act.isPending}>
                    Delegate
                  </button>
                </form>
              )}
              <form
                className="inline-form"
                onSubmit={(e) => {
                  e.preventDefault()
                  if (comment.trim())
                    act.mutate({ action: 'comment', text: comment.trim() }, { onSuccess: () => setComment('') })
                }}
              >
                <label>
                  Comment <input value={comment} onChange={(e) => setComment(e.target.value)} />
                </label>
                <button type="submit" disabled={act.isPending}>
                  Add comment
                </button>
              </form>
            </section>
          )}
          {!t.outcome && (
            // Shown before the task is claimed too, what it asks read-only.
            <section className="card" aria-labelledby="task-form-title">
              <h2 id="task-form-title">Complete</h2>
              {!holder && (
                <p className="notice task-form-hint">
                  {t.status === 'open'
                    ? 'Claim the task to fill in this form and complete it.'
                    : t.status === 'claimed'
                      ? `Claimed by ${t.assignee || 'someone else'}: only they can fill in this form and complete it.`
                      : `The task is ${t.status}: it cannot be completed.`}
                </p>
              )}
              <Suspense fallback={<p className="muted">Loading the form…</p>}>
                <TaskForm
                  // Drawn anew when it becomes the user's to fill in.
                  key={holder ? 'mine' : 'shown'}
                  schema={t.options.form}
                  initial={t.options.data}
                  outcomes={outcomes}
                  pending={act.isPending}
                  disabled={!holder}
                  onComplete={(outcome, data) => act.mutate({ action: 'complete', outcome, data })}
                />
              </Suspense>
            </section>
          )}
          {t.outcome && (
            <section className="card" aria-labelledby="task-outcome-title">
              <h2 id="task-outcome-title">Outcome</h2>
              <dl className="facts compact">
                <Fact term="Outcome">{t.outcome.outcome}</Fact>
                <Fact term="By">{t.outcome.by}</Fact>
                <Fact term="At">
                  <Time value={t.outcome.at} />
                </Fact>
              </dl>
              {t.outcome.data !== undefined && <JsonView value={t.outcome.data} />}
            </section>
          )}
          <section className="card" aria-labelledby="task-record-title">
            <h2 id="task-record-title">Record</h2>
            {(t.comments ?? []).length === 0 && (t.actions ?? []).length === 0 && <p className="muted">Nothing yet.</p>}
            <ul className="record">
              {(t.actions ?? []).map((a, i) => (
                <li key={`a${i}`}>
                  <Time value={a.at} /> {a.kind} by {a.by}
                  {a.to ? ` to ${a.to}` : ''}
                </li>
              ))}
              {(t.comments ?? []).map((c, i) => (
                <li key={`c${i}`}>
                  <Time value={c.at} /> {c.by}: “{c.text}”
                </li>
              ))}
            </ul>
          </section>
        </>
      )}
    </section>
  )
}
