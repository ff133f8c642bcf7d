import { useState } from 'react'
import type { SagaAction, SagaChange, SagaRecord } from '../../api/sagas'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { ErrorMessage } from '../../components/ErrorMessage'
import { FormField } from '../../components/FormField'
import { useChangeSaga, useResolveSaga } from '../sagas/queries'
import { waitsForDecision } from './Steps'

/** Each decision: its button, what its button says to a screen reader, and what was sent. */
const decisions: Record<SagaAction, { button: string; aria: (step: string) => string; sent: string }> = {
  retry: { button: 'Retry', aria: (s) => `Retry the compensation of ${s}`, sent: 'Retry' },
  done: { button: 'Mark done', aria: (s) => `Mark the compensation of ${s} done`, sent: 'Mark done' },
  skip: { button: 'Skip', aria: (s) => `Skip the compensation of ${s}`, sent: 'Skip' },
}

const changes: Record<SagaChange, string> = { disable: 'Disabled', enable: 'Enabled', terminate: 'Terminated' }

/**
 * What an operator does to a saga: decide each failed compensation of a
 * saga in compensation failed (retry it, mark it done by hand, skip it,
 * with a note), and disable, enable or terminate the saga. A refusal (the
 * saga moved on since the page read it, say) shows here, and the page
 * reads the saga again.
 */
export function OperatorActions({ saga }: { saga: SagaRecord }) {
  const resolve = useResolveSaga(saga.namespace, saga.id)
  const change = useChangeSaga(saga.namespace, saga.id)
  const [note, setNote] = useState('')
  const [reason, setReason] = useState('')
  const [done, setDone] = useState('')
  const [terminating, setTerminating] = useState(false)
  const waiting = saga.steps.filter((s) => waitsForDecision(saga, s.compensation))
  const running = saga.status === 'running'
  const disabled = saga.paused !== undefined
  const busy = resolve.isPending || change.isPending

  const decide = (action: SagaAction, step: string) => {
    change.reset()
    setDone('')
    resolve.mutate(
      { action, step, note: note.trim() || undefined },
      {
        onSuccess: () => {
          setDone(`${decisions[action].sent} sent for the compensation of ${step}.`)
          setNote('')
        },
      },
    )
  }
  const act = (c: SagaChange) => {
    resolve.reset()
    setDone('')
    change.mutate(
      { change: c, reason: reason.trim() || undefined },
      {
        onSuccess: () => {
          setDone(`${changes[c]}.`)
          setReason('')
          setTerminating(false)
        },
      },
    )
  }

  return (
    <section className="card saga-operator" aria-labelledby="operator-title">
      <div className="card-header">
        <h2 id="operator-title">Operator actions</h2>
        <span className="muted">
          {waiting.length > 0
            ? `the saga waits for a decision on ${waiting.length} failed compensation${waiting.length === 1 ? '' : 's'}`
            : !running
              ? 'the saga has ended: nothing can change it'
              : disabled
                ? 'the saga is disabled: nothing of it runs, and it takes no decision, until it is enabled'
                : 'nothing waits for a decision'}
        </span>
      </div>
      {!terminating && <ErrorMessage error={resolve.error ?? change.error} title="The saga refused the action" />}
      <p role="status" className="small muted">
        {done}
      </p>
      {waiting.length > 0 && (
        <section aria-labelledby="decide-title">
          <h3 id="decide-title">Failed compensations</h3>
          <p className="small">
            Retry runs the compensation again; Mark done records that someone undid the step by hand; Skip leaves the
            step as it is. Then the saga goes on compensating the steps before.
          </p>
          <div className="form-row">
            <FormField label="Note" hint="Recorded with the decision.">
              {(p) => <input {...p} type="text" value={note} onChange={(e) => setNote(e.target.value)} />}
            </FormField>
          </div>
          <div className="table-wrap">
            <table className="table compact saga-decide">
              <thead>
                <tr>
                  <th scope="col">Step</th>
                  <th scope="col" className="num">
                    Attempts
                  </th>
                  <th scope="col">Last error</th>
                  <th scope="col">Decision</th>
                </tr>
              </thead>
              <tbody>
                {waiting.map((s) => (
                  <tr key={s.name} data-step={s.name}>
                    <td className="strong">{s.name}</td>
                    <td className="num">{s.compensation.attempts ?? 0}</td>
                    <td className="wrap">{s.compensation.error || <span className="muted">—</span>}</td>
                    <td className="nowrap">
                      <div className="actions">
                        {(Object.keys(decisions) as SagaAction[]).map((a) => (
                          <button
                            key={a}
                            type="button"
                            className={a === 'retry' ? 'primary' : undefined}
                            disabled={busy}
                            aria-label={decisions[a].aria(s.name)}
                            onClick={() => decide(a, s.name)}
                          >
                            {decisions[a].button}
                          </button>
                        ))}
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
      {running && (
        <section aria-labelledby="saga-manage-title">
          <h3 id="saga-manage-title">The saga</h3>
          <div className="form-row">
            <FormField
              label="Reason"
              hint="Disable pauses the saga's run until it is enabled; terminate ends it where it is, without compensating."
            >
              {(p) => <input {...p} type="text" value={reason} onChange={(e) => setReason(e.target.value)} />}
            </FormField>
          </div>
          <div className="actions">
            {disabled ? (
              <button type="button" disabled={busy} onClick={() => act('enable')}>
                Enable
              </button>
            ) : (
              <button type="button" disabled={busy} onClick={() => act('disable')}>
                Disable
              </button>
            )}
            <button type="button" className="danger" disabled={busy} onClick={() => setTerminating(true)}>
              Terminate…
            </button>
          </div>
        </section>
      )}
      {terminating && (
        <ConfirmDialog
          title={`Terminate saga ${saga.id}?`}
          description={
            <>
              The saga ends where it is, in state {saga.state.replaceAll('_', ' ')},{' '}
              <strong>without compensating</strong> the steps that completed. This cannot be undone.
            </>
          }
          confirmLabel="Terminate"
          danger
          pending={change.isPending}
          error={change.error}
          onConfirm={() => act('terminate')}
          onClose={() => {
            setTerminating(false)
            change.reset()
          }}
        />
      )}
    </section>
  )
}
