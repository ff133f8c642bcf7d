import type { ShardInfo } from '../../api/types'
import { StatusBadge } from '../../components/StatusBadge'
import type { NodeRow } from './queries'

/** Every shard: its owner as the store records it, its range id, and whether the answering node serves it. */
export function ShardsTable({ shards, nodes }: { shards: ShardInfo[]; nodes: Map<string, NodeRow> }) {
  return (
    <div className="table-wrap">
      <table className="table compact">
        <thead>
          <tr>
            <th scope="col" className="num">
              Shard
            </th>
            <th scope="col">Owner</th>
            <th scope="col" className="num">
              Range ID
            </th>
            <th scope="col">Served here</th>
          </tr>
        </thead>
        <tbody>
          {shards.map((s) => (
            <tr key={s.id}>
              <td className="num">{s.id}</td>
              <td>
                <Owner owner={s.owner} node={nodes.get(s.owner)} />
              </td>
              <td className="num">{s.range_id}</td>
              <td>{s.serving ? <StatusBadge status="serving" /> : <span className="muted">no</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

/** A shard's owner, flagged when the node is not live or not known. */
export function Owner({ owner, node }: { owner: string; node: NodeRow | undefined }) {
  if (!owner) return <span className="muted">unowned</span>
  return (
    <>
      <span className="mono">{owner}</span>
      {!node?.live && <span className="tag tag-bad tag-flag">{node ? 'expired' : 'unknown node'}</span>}
    </>
  )
}
