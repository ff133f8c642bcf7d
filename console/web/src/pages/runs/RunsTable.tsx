import { Link } from '@tanstack/react-router'
import type { VisibilityRecord } from '../../api/types'
import { Attributes } from '../../components/Attributes'
import { StatusBadge } from '../../components/StatusBadge'
import { Time } from '../../components/Time'
import { formatDuration, parseTime } from '../../components/timeFormat'

/** A page of runs; each row links to its run. */
export function RunsTable({ runs, now }: { runs: VisibilityRecord[]; now: number }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Workflow ID / Run ID</th>
            <th scope="col">Type</th>
            <th scope="col">Status</th>
            <th scope="col">Business key</th>
            <th scope="col">Attributes</th>
            <th scope="col">Started</th>
            <th scope="col">Duration</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.run_id}>
              <td>
                <Link
                  to="/namespaces/$namespace/runs/$workflowId/$runId"
                  params={{ namespace: r.namespace, workflowId: r.workflow_id, runId: r.run_id }}
                  className="strong"
                >
                  {r.workflow_id}
                </Link>
                <div className="mono small muted">{r.run_id}</div>
              </td>
              <td>{r.workflow_type}</td>
              <td>
                <StatusBadge status={r.status} />
              </td>
              <td>{r.business_key ?? <span className="muted">—</span>}</td>
              <td>
                <Attributes attrs={r.attributes} />
              </td>
              <td>
                <Time value={r.start_time} />
              </td>
              <td className="num">{duration(r, now)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

function duration(r: VisibilityRecord, now: number): string {
  const start = parseTime(r.start_time)
  if (!start) return '—'
  const end = parseTime(r.close_time)?.getTime() ?? now
  return formatDuration(end - start.getTime())
}
