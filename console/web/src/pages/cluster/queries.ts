import { useQuery } from '@tanstack/react-query'
import { ApiError } from '../../api/client'
import { listNodes, listShards } from '../../api/cluster'
import type { Node } from '../../api/types'

/** How often the cluster page refreshes while it is live. */
export const refreshMs = 5000

/** Query keys of the cluster page. */
export const clusterKeys = {
  all: ['cluster'] as const,
  nodes: ['cluster', 'nodes'] as const,
  shards: ['cluster', 'shards'] as const,
}

/** A known node, and whether the server counts it live. */
export interface NodeRow extends Node {
  live: boolean
}

/**
 * Whether an error says the server has no cluster routes: a server whose
 * engine is not a cluster answers them 404.
 */
export function isNoCluster(error: unknown): error is ApiError {
  return error instanceof ApiError && error.status === 404
}

/** Refreshes every refreshMs while live, and never once the routes are missing. */
const interval = (live: boolean) => (q: { state: { error: unknown } }) =>
  live && !isNoCluster(q.state.error) ? refreshMs : false

/**
 * Every known node, marked live as the server judges it: those it lists
 * without all=true (the server's clock decides, not the browser's).
 */
export function useNodes(live: boolean) {
  return useQuery({
    queryKey: clusterKeys.nodes,
    queryFn: async ({ signal }): Promise<NodeRow[]> => {
      const [known, alive] = await Promise.all([listNodes(true, signal), listNodes(false, signal)])
      const liveIds = new Set(alive.nodes.map((n) => n.id))
      const rows = new Map<string, NodeRow>()
      // A node that registered between the two calls is in the live list only.
      for (const n of [...known.nodes, ...alive.nodes]) rows.set(n.id, { ...n, live: liveIds.has(n.id) })
      return [...rows.values()].sort((a, b) => a.id.localeCompare(b.id))
    },
    refetchInterval: interval(live),
  })
}

/** Every shard with its owner, range id and whether the answering node serves it. */
export function useShards(live: boolean) {
  return useQuery({
    queryKey: clusterKeys.shards,
    queryFn: ({ signal }) => listShards(signal),
    select: (list) => [...list.shards].sort((a, b) => a.id - b.id),
    refetchInterval: interval(live),
  })
}
