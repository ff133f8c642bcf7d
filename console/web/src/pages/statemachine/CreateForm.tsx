import { useNavigate } from '@tanstack/react-router'
import { useId, useState } from 'react'
import type { SmDefinition } from '../../api/statemachines'
import { ErrorMessage } from '../../components/ErrorMessage'
import { fromLocalInput } from '../../components/timeFormat'
import { useCreateSmInstance } from '../statemachines/queries'
import { rowsToVars, useVarRows, VarRows } from './VarRows'

/** The executor group (queue) the form offers first. */
const defaultGroup = 'statemachines'

/**
 * Creates an instance of a state machine in a namespace: its start state
 * (any state may be named; empty: the first start state), variables,
 * business key, external id, first activation and executor group. The
 * API's refusal shows in place; a created instance's page opens.
 */
export function CreateForm({ definition: d, namespace }: { definition: SmDefinition; namespace: string }) {
  const create = useCreateSmInstance(namespace)
  const navigate = useNavigate()
  const vars = useVarRows()
  const [state, setState] = useState('')
  const [businessKey, setBusinessKey] = useState('')
  const [externalId, setExternalId] = useState('')
  const [activation, setActivation] = useState('')
  const [group, setGroup] = useState(defaultGroup)
  const [invalid, setInvalid] = useState<Error | null>(null)
  const id = useId()
  const submit = (e: React.FormEvent) => {
    e.preventDefault()
    const v = rowsToVars(vars.rows)
    if (v instanceof Error) return setInvalid(v)
    setInvalid(null)
    create.mutate(
      {
        type: d.type,
        state: state.trim() || undefined,
        vars: v,
        business_key: businessKey.trim() || undefined,
        external_id: externalId.trim() || undefined,
        activation: fromLocalInput(activation) || undefined,
        executor_group: group.trim() || undefined,
      },
      {
        onSuccess: (r) =>
          void navigate({ to: '/statemachine-instances/$namespace/$id', params: { namespace, id: r.id } }),
      },
    )
  }
  return (
    <section className="card sm-create" aria-labelledby="create-title">
      <div className="card-header">
        <h2 id="create-title">Create instance</h2>
        <span className="muted">in namespace {namespace}</span>
      </div>
      <form onSubmit={submit} aria-labelledby="create-title" className="stack">
        <div className="form-row">
          <div className="field">
            <label htmlFor={`${id}-state`} className="field-label">
              Start state
            </label>
            <input
              id={`${id}-state`}
              type="text"
              list={`${id}-states`}
              value={state}
              placeholder={(d.states ?? []).find((s) => s.kind === 'start')?.name}
              onChange={(e) => setState(e.target.value)}
              className="mono"
              spellCheck={false}
            />
            <datalist id={`${id}-states`}>
              {(d.states ?? []).map((s) => (
                <option key={s.name} value={s.name} />
              ))}
            </datalist>
          </div>
          <div className="field">
            <label htmlFor={`${id}-bk`} className="field-label">
              Business key
            </label>
            <input id={`${id}-bk`} type="text" value={businessKey} onChange={(e) => setBusinessKey(e.target.value)} />
          </div>
          <div className="field">
            <label htmlFor={`${id}-ext`} className="field-label">
              External ID
            </label>
            <input
              id={`${id}-ext`}
              type="text"
              value={externalId}
              placeholder="unique per type"
              onChange={(e) => setExternalId(e.target.value)}
            />
          </div>
          <div className="field">
            <label htmlFor={`${id}-act`} className="field-label">
              Activation (empty: now)
            </label>
            <input
              id={`${id}-act`}
              type="datetime-local"
              value={activation}
              onChange={(e) => setActivation(e.target.value)}
            />
          </div>
          <div className="field">
            <label htmlFor={`${id}-group`} className="field-label">
              Executor group
            </label>
            <input id={`${id}-group`} type="text" value={group} onChange={(e) => setGroup(e.target.value)} />
          </div>
        </div>
        <VarRows form={vars} />
        <ErrorMessage error={invalid ?? create.error} title="Creating the instance failed" />
        <div className="actions">
          <button type="submit" className="primary" disabled={create.isPending}>
            Create instance
          </button>
        </div>
      </form>
    </section>
  )
}
