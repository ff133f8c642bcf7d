import { StatusBadge } from '../../components/StatusBadge'
import { Time } from '../../components/Time'
import { parseTime } from '../../components/timeFormat'
import { useNow } from '../../components/useNow'
import { ago, until } from './age'
import type { NodeRow } from './queries'

interface NodesTableProps {
  nodes: NodeRow[]
  /** Shards each node owns, by node id. */
  owned: Map<string, number>
  /** The node that answered (the owner of the shards it serves), if known. */
  answering: string | undefined
  /** When the nodes were fetched (ms since the epoch). */
  updatedAt: number
}

/** Every known node: where it is, the age of its last heartbeat, whether it is live. */
export function NodesTable({ nodes, owned, answering, updatedAt }: NodesTableProps) {
  // The ages grow every second, and count from no earlier than the fetch.
  const now = Math.max(useNow(1000), updatedAt)
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Address</th>
            <th scope="col">Group</th>
            <th scope="col">Status</th>
            <th scope="col">Last heartbeat</th>
            <th scope="col">Expires</th>
            <th scope="col">Started</th>
            <th scope="col" className="num">
              Shards
            </th>
          </tr>
        </thead>
        <tbody>
          {nodes.map((n) => (
            <tr key={n.id}>
              <td>
                <span className="strong mono">{n.id}</span>
                {n.id === answering && (
                  <span className="tag tag-here" title="The node that answered these calls">
                    this node
                  </span>
                )}
                <div className="small muted">
                  {n.host} · pid {n.pid}
                </div>
              </td>
              <td className="mono">{n.address || <span className="muted">—</span>}</td>
              <td>{n.group || <span className="muted">—</span>}</td>
              <td>
                <StatusBadge status={n.live ? 'live' : 'expired'} />
              </td>
              <td className="nowrap">
                <AgeTime iso={n.heartbeat_at} text={ago(n.heartbeat_at, now)} />
              </td>
              <td className="nowrap">
                <AgeTime iso={n.expires_at} text={until(n.expires_at, now)} />
              </td>
              <td>
                <Time value={n.started_at} />
              </td>
              <td className="num">{owned.get(n.id) ?? 0}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

/** A relative time, with the exact time on hover and for assistive technology. */
function AgeTime({ iso, text }: { iso: string; text: string }) {
  const d = parseTime(iso)
  if (!d) return <span className="muted">—</span>
  return (
    <time dateTime={d.toISOString()} title={d.toISOString()}>
      {text}
    </time>
  )
}
