import { Link } from '@tanstack/react-router'
import type { ScheduleDescription, ScheduledRun } from '../../api/types'
import { Attributes } from '../../components/Attributes'
import { PayloadView } from '../../components/JsonView'
import { StatusBadge } from '../../components/StatusBadge'
import { Time } from '../../components/Time'
import { formatNanos } from '../../components/timeFormat'
import { Calendar } from '../schedules/Calendar'
import { catchupLabels, defaultCatchupWindow, formatGoDuration, overlapLabels } from '../schedules/spec'
import { Fact } from '../../components/Fact'

interface SectionProps {
  schedule: ScheduleDescription
}

/** What the schedule starts and when: its calendars, its workflow and its policies. */
export function Definition({ schedule: d }: SectionProps) {
  const { spec, action, policies } = d.schedule
  const limit = d.schedule.action_limit ?? 0
  const catchup = policies?.catchup_window || 0
  return (
    <section className="card" aria-labelledby="definition-title">
      <h2 id="definition-title">Schedule</h2>
      <dl className="facts compact">
        <Fact term="Calendar">
          <Calendar spec={{ ...spec, time_zone: undefined }} />
        </Fact>
        <Fact term="Time zone">{spec.time_zone || 'UTC'}</Fact>
        {spec.start && (
          <Fact term="No fire before">
            <Time value={spec.start} />
          </Fact>
        )}
        {spec.end && (
          <Fact term="No fire from">
            <Time value={spec.end} />
          </Fact>
        )}
        {spec.jitter ? <Fact term="Jitter">up to {formatNanos(spec.jitter)}</Fact> : null}
        <Fact term="Workflow type">{action.workflow_type}</Fact>
        <Fact term="Queue">{action.queue || 'default'}</Fact>
        {action.priority ? <Fact term="Priority">{action.priority}</Fact> : null}
        {action.run_timeout ? <Fact term="Run timeout">{formatNanos(action.run_timeout)}</Fact> : null}
        <Fact term="While a run is open">{overlapLabels[policies?.overlap || 'skip']}</Fact>
        <Fact term="Catch-up window">
          {formatGoDuration(catchup || defaultCatchupWindow)}
          {!catchup && <span className="muted"> (default)</span>}
        </Fact>
        <Fact term="After downtime">
          {catchupLabels[policies?.catchup || 'latest']}
          {!policies?.catchup && <span className="muted"> (default)</span>}
        </Fact>
        <Fact term="Action limit">
          {limit > 0 ? `${d.actions.toLocaleString()} of ${limit.toLocaleString()} taken` : 'none'}
        </Fact>
        {!d.schedule.paused && d.schedule.note && <Fact term="Note">{d.schedule.note}</Fact>}
        <Fact term="Created">
          <Time value={d.create_time} />
        </Fact>
        <Fact term="Updated">
          <Time value={d.update_time} />
        </Fact>
        <Fact term="Carried by">
          <Link
            to="/namespaces/$namespace/runs/$workflowId/$runId"
            params={{ namespace: d.namespace, workflowId: d.workflow_id, runId: d.run_id }}
          >
            {d.workflow_id}
          </Link>
        </Fact>
        {action.attributes && (
          <Fact term="Attributes">
            <Attributes attrs={action.attributes} />
          </Fact>
        )}
      </dl>
      <h3>Input</h3>
      <PayloadView payload={action.input} empty="no input" />
    </section>
  )
}

/** The next 10 fire times, or why there are none. */
export function NextFires({ schedule: d }: SectionProps) {
  const fires = d.next_fires ?? []
  return (
    <section className="card" aria-labelledby="next-fires-title">
      <h2 id="next-fires-title">Next fire times</h2>
      {fires.length > 0 ? (
        <ol className="fires">
          {fires.map((t) => (
            <li key={t}>
              {/* In the schedule's own zone, the one its calendar is read in. */}
              <Time value={t} age timeZone={d.schedule.spec.time_zone || 'UTC'} />
            </li>
          ))}
        </ol>
      ) : (
        <p className="muted">
          {d.schedule.paused
            ? 'None while the schedule is paused.'
            : 'None: the schedule is past its end or has taken its action limit.'}
        </p>
      )}
    </section>
  )
}

/** What the schedule did: its counters. */
export function ActionsTaken({ schedule: d }: SectionProps) {
  const counts: [string, number, string][] = [
    ['Fired', d.actions, 'Runs started at a fire time'],
    ['Triggered', d.triggers, 'Runs started by a trigger'],
    ['Backfilled', d.backfilled, 'Runs started by a backfill'],
    ['Running', d.running?.length ?? 0, 'Runs it started that are open'],
    ['Buffered', d.buffered, 'Fires waiting for an open run to close'],
    ['Skipped', d.skipped, 'Fires dropped while a run was open'],
    ['Missed', d.missed, 'Fires that came due while Strand was down and were not run'],
    ['While paused', d.paused_fires, 'Fires that came while it was paused'],
  ]
  return (
    <section className="card" aria-labelledby="counts-title">
      <h2 id="counts-title">Actions taken</h2>
      <dl className="facts counters">
        {counts.map(([term, n, what]) => (
          <div key={term} title={what}>
            <dt>{term}</dt>
            <dd className="big">{n.toLocaleString()}</dd>
          </div>
        ))}
      </dl>
    </section>
  )
}

/** The backfills in progress, each with how far it went. */
export function Backfills({ schedule: d }: SectionProps) {
  const backfills = d.backfills ?? []
  if (backfills.length === 0) return null
  return (
    <section className="card" aria-labelledby="backfills-title">
      <h2 id="backfills-title">Backfills in progress</h2>
      <div className="table-wrap">
        <table className="table compact">
          <thead>
            <tr>
              <th scope="col">From</th>
              <th scope="col">To</th>
              <th scope="col" className="num">
                Parallelism
              </th>
              <th scope="col" className="num">
                Started
              </th>
              <th scope="col" className="num">
                Closed
              </th>
              <th scope="col">Progress</th>
            </tr>
          </thead>
          <tbody>
            {backfills.map((b, i) => (
              <tr key={i}>
                <td>
                  <Time value={b.start} />
                </td>
                <td>
                  <Time value={b.end} />
                </td>
                <td className="num">{b.parallelism || 1}</td>
                <td className="num">{b.started.toLocaleString()}</td>
                <td className="num">
                  {b.closed.toLocaleString()} of {b.total.toLocaleString()}
                </td>
                <td className="share">
                  <div
                    className="bar"
                    role="progressbar"
                    aria-label="Runs closed"
                    aria-valuemin={0}
                    aria-valuemax={b.total}
                    aria-valuenow={b.closed}
                  >
                    <span style={{ width: `${b.total ? (100 * b.closed) / b.total : 0}%` }} />
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}

/** How an action was taken, as the table says it. */
const kindLabels: Record<ScheduledRun['kind'], string> = {
  scheduled: 'Scheduled',
  trigger: 'Trigger',
  backfill: 'Backfill',
}

/**
 * The last actions, the newest first, each linking to its run; then the
 * open runs that are older than those.
 */
export function RecentActions({ schedule: d }: SectionProps) {
  const recent = [...(d.recent ?? [])].reverse()
  const listed = new Set(recent.map((r) => r.run_id ?? r.workflow_id))
  const older = (d.running ?? []).filter((r) => !listed.has(r.run_id ?? r.workflow_id))
  const rows = [...recent, ...older]
  return (
    <section className="card" aria-labelledby="recent-title">
      <div className="card-header">
        <h2 id="recent-title">Recent actions</h2>
        <span className="muted">the last {d.recent?.length ?? 0}, newest first</span>
        <div className="spacer" />
        <Link
          to="/namespaces/$namespace/runs"
          params={{ namespace: d.namespace }}
          search={{ id: `${d.schedule_id}-` }}
          className="small"
        >
          All runs of {d.schedule_id}
        </Link>
      </div>
      {rows.length === 0 ? (
        <p className="muted">No actions yet: the schedule starts a run at its next fire time, or when triggered.</p>
      ) : (
        <div className="table-wrap">
          <table className="table compact">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Kind</th>
                <th scope="col">Status</th>
                <th scope="col">Fire time</th>
                <th scope="col">Taken</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={`${r.workflow_id} ${r.run_id ?? ''}`}>
                  <td>
                    {r.run_id ? (
                      <Link
                        to="/namespaces/$namespace/runs/$workflowId/$runId"
                        params={{ namespace: d.namespace, workflowId: r.workflow_id, runId: r.run_id }}
                      >
                        {r.workflow_id}
                      </Link>
                    ) : (
                      r.workflow_id
                    )}
                    {r.reason && <div className="small muted">{r.reason}</div>}
                  </td>
                  <td>{kindLabels[r.kind] ?? r.kind}</td>
                  <td>
                    <StatusBadge status={r.status} />
                  </td>
                  <td>
                    <Time value={r.fire_time} />
                  </td>
                  <td>
                    <Time value={r.time} />
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
