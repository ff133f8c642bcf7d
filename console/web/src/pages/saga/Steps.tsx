import type { PhaseRecord, SagaRecord } from '../../api/sagas'
import { Time } from '../../components/Time'
import { PhaseBadge } from './badges'

/** "1 attempt", "3 attempts" ('' for none). */
function attempts(p: PhaseRecord): string {
  return p.attempts ? `${p.attempts} attempt${p.attempts === 1 ? '' : 's'}` : ''
}

/** Whether the saga waits for an operator's decision on this compensation. */
export function waitsForDecision(saga: SagaRecord, c: PhaseRecord): boolean {
  return saga.state === 'compensation_failed' && c.state === 'failed'
}

/**
 * The saga's steps in the order they were scheduled, a line each: its
 * forward run and its compensation side by side, with their attempts and
 * last errors; the steps of a parallel group are marked with its number.
 */
export function Steps({ saga }: { saga: SagaRecord }) {
  const groups = new Set(saga.steps.map((s) => s.group ?? 0).filter((g) => g > 0))
  return (
    <section className="card" aria-labelledby="steps-title">
      <div className="card-header">
        <h2 id="steps-title">Steps</h2>
        <span className="muted">
          {saga.steps.length} step{saga.steps.length === 1 ? '' : 's'}
          {groups.size > 0 && `, ${groups.size} parallel group${groups.size === 1 ? '' : 's'}`}; compensations run in
          reverse order
        </span>
      </div>
      {saga.steps.length === 0 ? (
        <p className="muted">No step has been scheduled yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="table compact saga-steps">
            <thead>
              <tr>
                <th scope="col">Step</th>
                <th scope="col">Group</th>
                <th scope="col">Forward</th>
                <th scope="col">Compensation</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {saga.steps.map((s) => {
                const f = s.forward
                const c = s.compensation
                return (
                  <tr
                    key={s.name}
                    data-step={s.name}
                    data-forward={f.state}
                    data-compensation={c.state}
                    data-group={s.group ?? 0}
                  >
                    <td>
                      <span className="strong">{s.name}</span>
                      <div className="muted small mono">{[f.step, c.step].filter(Boolean).join(' · ') || '—'}</div>
                    </td>
                    <td>
                      {s.group ? (
                        <span className="tag" title={`Ran in parallel with the other steps of group ${s.group}`}>
                          ∥ parallel {s.group}
                        </span>
                      ) : (
                        <span className="muted">alone</span>
                      )}
                    </td>
                    <td className="saga-phase">
                      <PhaseBadge state={f.state} /> <span className="muted small">{attempts(f)}</span>
                    </td>
                    <td className="saga-phase">
                      <PhaseBadge state={c.state} /> <span className="muted small">{attempts(c)}</span>
                      {waitsForDecision(saga, c) && (
                        <>
                          {' '}
                          <span className="tag tag-warn">waits for a decision</span>
                        </>
                      )}
                    </td>
                    <td className="wrap">
                      {f.error && (
                        <div className="saga-error" data-phase="forward">
                          <span className="muted small">forward: </span>
                          {f.error}
                        </div>
                      )}
                      {c.error && (
                        <div className="saga-error" data-phase="compensation">
                          <span className="muted small">compensation: </span>
                          {c.error}
                        </div>
                      )}
                      {!f.error && !c.error && <span className="muted">—</span>}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

const actionLabels = { retry: 'Retry', done: 'Mark done', skip: 'Skip' } as const

/** The operators' decisions, as the saga received them. */
export function Decisions({ saga }: { saga: SagaRecord }) {
  return (
    <section className="card" aria-labelledby="decisions-title">
      <div className="card-header">
        <h2 id="decisions-title">Operator decisions</h2>
        <span className="muted">on failed compensations, as the saga received them</span>
      </div>
      {saga.operators.length === 0 ? (
        <p className="muted">No decisions.</p>
      ) : (
        <div className="table-wrap">
          <table className="table compact saga-decisions">
            <thead>
              <tr>
                <th scope="col">Received</th>
                <th scope="col">Decision</th>
                <th scope="col">Step</th>
                <th scope="col">Note</th>
                <th scope="col">By</th>
              </tr>
            </thead>
            <tbody>
              {saga.operators.map((o, i) => (
                <tr key={i} data-action={o.action} data-step={o.step ?? ''}>
                  <td>
                    <Time value={o.time} millis />
                  </td>
                  <td>{actionLabels[o.action] ?? o.action}</td>
                  <td>{o.step || <span className="muted">every failed compensation</span>}</td>
                  <td className="wrap">{o.note || <span className="muted">—</span>}</td>
                  <td>{o.identity || <span className="muted">—</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}
