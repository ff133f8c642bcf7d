import { Link } from '@tanstack/react-router'
import type { Description } from '../../api/types'
import { StatusBadge } from '../../components/StatusBadge'
import { Time } from '../../components/Time'

/** The run's steps, timers and children that have not closed, when it has any. */
export function Pending({ run }: { run: Description }) {
  const steps = run.pending_steps ?? []
  const timers = run.pending_timers ?? []
  const children = run.pending_children ?? []
  if (steps.length + timers.length + children.length === 0) return null
  return (
    <section className="card" aria-labelledby="pending-title">
      <h2 id="pending-title">Pending</h2>
      {steps.length > 0 && (
        <div className="table-wrap">
          <table className="table compact">
            <caption>Steps</caption>
            <thead>
              <tr>
                <th scope="col">Seq</th>
                <th scope="col">Step</th>
                <th scope="col">State</th>
                <th scope="col">Attempt</th>
                <th scope="col">Scheduled</th>
                <th scope="col">Started</th>
                <th scope="col">Last heartbeat</th>
                <th scope="col">Last failure</th>
              </tr>
            </thead>
            <tbody>
              {steps.map((s) => (
                <tr key={s.seq}>
                  <td className="num">{s.seq}</td>
                  <td>{s.name}</td>
                  <td>
                    <StatusBadge status={s.state} />
                  </td>
                  <td className="num">{s.attempt}</td>
                  <td>
                    <Time value={s.scheduled_time} millis />
                  </td>
                  <td>
                    <Time value={s.started_time} millis />
                  </td>
                  <td>
                    <Time value={s.last_heartbeat} millis />
                  </td>
                  <td className="wrap">{s.last_failure ?? <span className="muted">—</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {timers.length > 0 && (
        <div className="table-wrap">
          <table className="table compact">
            <caption>Timers</caption>
            <thead>
              <tr>
                <th scope="col">Seq</th>
                <th scope="col">Fires</th>
              </tr>
            </thead>
            <tbody>
              {timers.map((t) => (
                <tr key={t.seq}>
                  <td className="num">{t.seq}</td>
                  <td>
                    <Time value={t.fire_time} millis age />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {children.length > 0 && (
        <div className="table-wrap">
          <table className="table compact">
            <caption>Child workflows</caption>
            <thead>
              <tr>
                <th scope="col">Seq</th>
                <th scope="col">Type</th>
                <th scope="col">Workflow ID</th>
                <th scope="col">Run ID</th>
              </tr>
            </thead>
            <tbody>
              {children.map((c) => (
                <tr key={c.seq}>
                  <td className="num">{c.seq}</td>
                  <td>{c.workflow_type}</td>
                  <td>{c.workflow_id}</td>
                  <td>
                    {c.run_id ? (
                      <Link
                        to="/namespaces/$namespace/runs/$workflowId/$runId"
                        params={{ namespace: run.namespace, workflowId: c.workflow_id, runId: c.run_id }}
                        className="mono"
                      >
                        {c.run_id}
                      </Link>
                    ) : (
                      <span className="muted">not started yet</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}
