import { Link } from '@tanstack/react-router'
import { useState } from 'react'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { ErrorMessage } from '../../components/ErrorMessage'
import { FormField } from '../../components/FormField'
import { useDeleteRule, useMessageRules, usePutRule } from './queries'

/** The namespace's message rules; its admins add and delete them. */
export function RulesSection({ namespace, mayEdit }: { namespace: string; mayEdit: boolean }) {
  const q = useMessageRules(namespace)
  const del = useDeleteRule(namespace)
  const [adding, setAdding] = useState(false)
  const [deleting, setDeleting] = useState<string | null>(null)
  const rules = q.data?.rules ?? []
  return (
    <section className="card" aria-labelledby="rules-title">
      <div className="page-header">
        <h2 id="rules-title">Rules</h2>
        <span className="muted">a message no run waits for starts a run</span>
        <div className="spacer" />
        {mayEdit && (
          <button type="button" onClick={() => setAdding(true)}>
            Add rule…
          </button>
        )}
      </div>
      <ErrorMessage error={q.error} title="Listing the rules failed" />
      {q.data &&
        (rules.length > 0 ? (
          <div className="table-wrap">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Message name</th>
                  <th scope="col">Starts</th>
                  <th scope="col">Queue</th>
                  {mayEdit && <th scope="col">Actions</th>}
                </tr>
              </thead>
              <tbody>
                {rules.map((r) => (
                  <tr key={r.name}>
                    <td>
                      <Link to="/namespaces/$namespace/messages" params={{ namespace }} search={{ name: r.name }}>
                        {r.name}
                      </Link>
                    </td>
                    <td className="mono">{r.workflow_type}</td>
                    <td className="mono">{r.queue || 'default'}</td>
                    {mayEdit && (
                      <td>
                        <button type="button" className="danger" onClick={() => setDeleting(r.name)}>
                          Delete
                        </button>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <p className="muted">No rules: a message no run waits for is kept until one does.</p>
        ))}
      {adding && <RuleDialog namespace={namespace} onClose={() => setAdding(false)} />}
      {deleting && (
        <ConfirmDialog
          title={`Delete the rule of ${deleting}?`}
          description="Messages of this name that no run waits for are then kept, not started."
          confirmLabel="Delete rule"
          danger
          pending={del.isPending}
          error={del.error}
          onConfirm={() => del.mutate(deleting, { onSuccess: () => setDeleting(null) })}
          onClose={() => setDeleting(null)}
        />
      )}
    </section>
  )
}

function RuleDialog({ namespace, onClose }: { namespace: string; onClose: () => void }) {
  const put = usePutRule(namespace)
  const [name, setName] = useState('')
  const [type, setType] = useState('')
  const [queue, setQueue] = useState('')
  return (
    <ConfirmDialog
      title="Add a message rule"
      description="A message of this name that no run waits for starts a run of the workflow type, with the message's correlation key as its workflow id and its payload as input."
      confirmLabel="Save rule"
      pending={put.isPending}
      error={put.error}
      onConfirm={() =>
        put.mutate({ name: name.trim(), workflow_type: type.trim(), queue: queue.trim() }, { onSuccess: onClose })
      }
      onClose={onClose}
    >
      <FormField label="Message name">
        {(c) => <input {...c} value={name} onChange={(e) => setName(e.target.value)} autoFocus />}
      </FormField>
      <FormField label="Workflow type">
        {(c) => <input {...c} value={type} onChange={(e) => setType(e.target.value)} />}
      </FormField>
      <FormField label="Task queue" hint="Empty: default.">
        {(c) => <input {...c} value={queue} onChange={(e) => setQueue(e.target.value)} />}
      </FormField>
    </ConfirmDialog>
  )
}
