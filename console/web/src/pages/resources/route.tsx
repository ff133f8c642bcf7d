import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { ResourcesPage } from './ResourcesPage'

/** /resources: the resource centre's files and data sources, read-only. */
export const resourcesRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/resources',
  component: ResourcesPage,
})
