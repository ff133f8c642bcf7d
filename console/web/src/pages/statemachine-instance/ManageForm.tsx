import { useId, useState } from 'react'
import type { SmDefinition, SmInstance } from '../../api/statemachines'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { fromLocalInput } from '../../components/timeFormat'
import { useSignalSmInstance, useUpdateSmInstance, useWakeupSmInstance } from '../statemachines/queries'
import { rowsToVars, useVarRows, VarRows } from '../statemachine/VarRows'

/**
 * Changes an instance from outside (an external change action): move it
 * to a state, set its next activation or variables, with a reason; and
 * wake it up or set its signal. A finished instance cannot be changed.
 * Signals are a writer's of the namespace, the rest an operator's: a
 * writer sees the signal alone, a reader nothing.
 */
export function ManageForm({
  inst,
  namespace,
  definition,
}: {
  inst: SmInstance
  namespace: string
  definition: SmDefinition | undefined
}) {
  const update = useUpdateSmInstance(namespace, inst.id)
  const wakeup = useWakeupSmInstance(namespace, inst.id)
  const signal = useSignalSmInstance(namespace, inst.id)
  const vars = useVarRows()
  const [state, setState] = useState('')
  const [activation, setActivation] = useState('')
  const [reason, setReason] = useState('')
  const [signalValue, setSignalValue] = useState('')
  const [invalid, setInvalid] = useState<Error | null>(null)
  const [done, setDone] = useState('')
  const id = useId()
  const access = useAccess()
  const operate = access.can(namespace, 'operator')
  const write = access.can(namespace, 'writer')
  const finished = inst.status === 'finished'
  const submit = (e: React.FormEvent) => {
    e.preventDefault()
    // Enter in a writer's form sets the signal: it has no update.
    if (!operate) return sendSignal(false)
    const v = rowsToVars(vars.rows)
    if (v instanceof Error) return setInvalid(v)
    const at = fromLocalInput(activation)
    if (!state && !at && !v) return setInvalid(new Error('Choose a state, an activation or a variable to change.'))
    setInvalid(null)
    update.mutate(
      { state: state || undefined, activation: at || undefined, vars: v, reason: reason.trim() || undefined },
      {
        onSuccess: () => {
          setDone(`Update sent${state ? `: moving to ${state}` : ''}.`)
          setState('')
          setActivation('')
          setReason('')
          vars.clear()
        },
      },
    )
  }
  const sendSignal = (clear: boolean) => {
    const n = Number(signalValue)
    if (!clear && (signalValue.trim() === '' || !Number.isInteger(n)))
      return setInvalid(new Error('A signal is an integer.'))
    setInvalid(null)
    signal.mutate(
      { signal: clear ? null : n, reason: reason.trim() || undefined },
      { onSuccess: () => setDone(clear ? 'Signal cleared.' : `Signal ${n} set.`) },
    )
  }
  if (!write) return null
  return (
    <section className="card sm-manage" aria-labelledby="manage-title">
      <div className="card-header">
        <h2 id="manage-title">Manage</h2>
        <span className="muted">
          {finished
            ? 'the instance finished: it cannot be changed'
            : operate
              ? 'an update is an external change action'
              : 'set or clear its signal'}
        </span>
      </div>
      <form onSubmit={submit} aria-labelledby="manage-title" className="sm-form">
        <fieldset className="plain-fieldset" disabled={finished}>
          <div className="form-row">
            {operate && (
              <>
                <div className="field">
                  <label htmlFor={`${id}-state`} className="field-label">
                    Move to state
                  </label>
                  <select id={`${id}-state`} value={state} onChange={(e) => setState(e.target.value)}>
                    <option value="">(stay in {inst.state})</option>
                    {(definition?.states ?? []).map((s) => (
                      <option key={s.name} value={s.name}>
                        {s.name} ({s.kind})
                      </option>
                    ))}
                  </select>
                </div>
                <div className="field">
                  <label htmlFor={`${id}-act`} className="field-label">
                    Next activation
                  </label>
                  <input
                    id={`${id}-act`}
                    type="datetime-local"
                    value={activation}
                    onChange={(e) => setActivation(e.target.value)}
                  />
                </div>
              </>
            )}
            <div className="field">
              <label htmlFor={`${id}-reason`} className="field-label">
                Reason
              </label>
              <input id={`${id}-reason`} type="text" value={reason} onChange={(e) => setReason(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor={`${id}-signal`} className="field-label">
                Signal (integer)
              </label>
              <input
                id={`${id}-signal`}
                type="text"
                inputMode="numeric"
                value={signalValue}
                onChange={(e) => setSignalValue(e.target.value)}
              />
            </div>
          </div>
          {operate && <VarRows form={vars} />}
          <ErrorMessage
            error={invalid ?? update.error ?? wakeup.error ?? signal.error}
            title="Changing the instance failed"
          />
          <div className="actions">
            {operate && (
              <>
                <button type="submit" className="primary" disabled={update.isPending}>
                  Update
                </button>
                <button
                  type="button"
                  disabled={wakeup.isPending}
                  onClick={() => wakeup.mutate(undefined, { onSuccess: () => setDone('Woken up.') })}
                >
                  Wake up
                </button>
              </>
            )}
            <button type="button" disabled={signal.isPending} onClick={() => sendSignal(false)}>
              Signal
            </button>
            <button type="button" disabled={signal.isPending} onClick={() => sendSignal(true)}>
              Clear signal
            </button>
            <span role="status" className="small muted">
              {done}
            </span>
          </div>
        </fieldset>
      </form>
    </section>
  )
}
