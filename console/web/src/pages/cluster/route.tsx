import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { ClusterPage } from './ClusterPage'

/** /cluster: the nodes with their heartbeats, and the shards with their owners. */
export const clusterRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/cluster',
  component: ClusterPage,
})
