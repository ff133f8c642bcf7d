import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { DagsPage } from './DagsPage'
import { validateDagsSearch } from './search'

/** /dags: the DAG pipelines, their release, and a way to run each. */
export const dagsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/dags',
  validateSearch: validateDagsSearch,
  component: DagsPage,
})
