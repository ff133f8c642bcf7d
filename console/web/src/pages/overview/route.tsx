import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { OverviewPage } from './OverviewPage'

/** /namespaces/$namespace/overview: what the engine did in a namespace in the last hour. */
export const overviewRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/overview',
  component: OverviewPage,
})
