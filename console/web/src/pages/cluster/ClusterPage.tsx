import { useMemo, useState } from 'react'
import type { ShardInfo } from '../../api/types'
import { ErrorMessage } from '../../components/ErrorMessage'
import { RefreshToggle } from '../../components/RefreshToggle'
import { NodesTable } from './NodesTable'
import { isNoCluster, refreshMs, useNodes, useShards, type NodeRow } from './queries'
import { Owner, ShardsTable } from './ShardsTable'

/** The cluster: a summary, the nodes with their heartbeats, the shards with their owners. */
export function ClusterPage() {
  const [live, setLive] = useState(true)
  const nodes = useNodes(live)
  const shards = useShards(live)
  const missing = [nodes.error, shards.error].find(isNoCluster)
  const byId = useMemo(() => new Map((nodes.data ?? []).map((n) => [n.id, n])), [nodes.data])
  const owned = useMemo(() => countOwners(shards.data ?? []), [shards.data])
  const answering = shards.data?.find((s) => s.serving)?.owner

  return (
    <section className="page" aria-labelledby="cluster-title">
      <div className="page-header">
        <h1 id="cluster-title">Cluster</h1>
        <div className="spacer" />
        {!missing && (
          <RefreshToggle
            live={live}
            onChange={setLive}
            every={refreshMs / 1000}
            updatedAt={Math.min(nodes.dataUpdatedAt, shards.dataUpdatedAt)}
            fetching={nodes.isFetching || shards.isFetching}
          />
        )}
      </div>
      {missing ? (
        <div className="empty">
          <p className="strong">This server runs no cluster.</p>
          <p>
            It does not list nodes or shards: <code>GET /api/v1{missing === nodes.error ? '/nodes' : '/shards'}</code>{' '}
            answered 404 <span className="muted">({missing.message})</span>.
          </p>
        </div>
      ) : (
        <>
          {nodes.data && shards.data && (
            <Overview nodes={nodes.data} shards={shards.data} owned={owned} byId={byId} answering={answering} />
          )}
          <section className="card" aria-labelledby="nodes-title">
            <div className="card-header">
              <h2 id="nodes-title">Nodes</h2>
              {nodes.data && (
                <span className="muted small">every known node; live ones heartbeat within their TTL</span>
              )}
            </div>
            <ErrorMessage error={nodes.error} title="Listing nodes failed" />
            {nodes.isPending && <p className="muted">Loading nodes…</p>}
            {nodes.data &&
              (nodes.data.length > 0 ? (
                <NodesTable nodes={nodes.data} owned={owned} answering={answering} updatedAt={nodes.dataUpdatedAt} />
              ) : (
                <p className="empty">No nodes.</p>
              ))}
          </section>
          <section className="card" aria-labelledby="shards-title">
            <div className="card-header">
              <h2 id="shards-title">Shards</h2>
              {shards.data && (
                <span className="muted small">
                  owners as the store records them; served here: by the node that answered
                </span>
              )}
            </div>
            <ErrorMessage error={shards.error} title="Listing shards failed" />
            {shards.isPending && <p className="muted">Loading shards…</p>}
            {shards.data &&
              (shards.data.length > 0 ? (
                <ShardsTable shards={shards.data} nodes={byId} />
              ) : (
                <p className="empty">No shards.</p>
              ))}
          </section>
        </>
      )}
    </section>
  )
}

/** The number of shards each owner has ('' for the unowned ones). */
function countOwners(shards: ShardInfo[]): Map<string, number> {
  const out = new Map<string, number>()
  for (const s of shards) out.set(s.owner, (out.get(s.owner) ?? 0) + 1)
  return out
}

interface OverviewProps {
  nodes: NodeRow[]
  shards: ShardInfo[]
  owned: Map<string, number>
  byId: Map<string, NodeRow>
  answering: string | undefined
}

/** Counts of nodes and shards, and how the shards spread over their owners. */
function Overview({ nodes, shards, owned, byId, answering }: OverviewProps) {
  const liveNodes = nodes.filter((n) => n.live)
  // Every owner, and every live node though it owns none: an idle node
  // shows as one.
  const owners = new Map(owned)
  for (const n of liveNodes) if (!owners.has(n.id)) owners.set(n.id, 0)
  const rows = [...owners].sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
  const total = shards.length
  const orphaned = shards.filter((s) => s.owner !== '' && !byId.get(s.owner)?.live).length
  return (
    <section className="card" aria-labelledby="overview-title">
      <h2 id="overview-title">Summary</h2>
      <div className="overview">
        <dl className="facts compact">
          <div>
            <dt>Live nodes</dt>
            <dd>
              <span className="big">{liveNodes.length}</span> <span className="muted">of {nodes.length} known</span>
            </dd>
          </div>
          <div>
            <dt>Shards</dt>
            <dd>
              <span className="big">{total}</span>
            </dd>
          </div>
          <div>
            <dt>Served by this node</dt>
            <dd>
              <span className="big">{shards.filter((s) => s.serving).length}</span>
              {answering && <span className="muted mono small"> {answering}</span>}
            </dd>
          </div>
          <div>
            <dt>Without a live owner</dt>
            <dd>
              <span className={`big${owned.get('') || orphaned ? ' bad' : ''}`}>{(owned.get('') ?? 0) + orphaned}</span>
            </dd>
          </div>
        </dl>
        <div className="table-wrap">
          <table className="table compact">
            <caption>Shards per owner</caption>
            <thead>
              <tr>
                <th scope="col">Owner</th>
                <th scope="col" className="num">
                  Shards
                </th>
                <th scope="col">
                  <span className="visually-hidden">Share</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map(([owner, n]) => (
                <tr key={owner}>
                  <td>
                    <Owner owner={owner} node={byId.get(owner)} />
                  </td>
                  <td className="num">
                    {n} <span className="muted small">({total ? Math.round((100 * n) / total) : 0}%)</span>
                  </td>
                  <td className="share">
                    <div className="bar" aria-hidden="true">
                      <span style={{ width: `${total ? (100 * n) / total : 0}%` }} />
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>
    </section>
  )
}
