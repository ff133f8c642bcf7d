import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { RunsPage } from './RunsPage'
import { validateRunsSearch } from './search'

/** /namespaces/$namespace/runs: the runs of a namespace, filtered and paged. */
export const runsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/runs',
  validateSearch: validateRunsSearch,
  component: RunsPage,
})
