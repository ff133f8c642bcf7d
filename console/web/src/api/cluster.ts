import { request } from './client'
import type { NodeList, ShardList } from './types'

// The cluster routes exist only on a server whose engine implements
// api.Cluster; another answers them 404.

/** GET /nodes: the live nodes, or every known one with all. */
export function listNodes(all: boolean, signal?: AbortSignal): Promise<NodeList> {
  return request('GET', '/nodes', { query: { all: all ? 'true' : undefined }, signal })
}

/** GET /shards: every shard, its owner and whether the answering node serves it. */
export function listShards(signal?: AbortSignal): Promise<ShardList> {
  return request('GET', '/shards', { signal })
}
