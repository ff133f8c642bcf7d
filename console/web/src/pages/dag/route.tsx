import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { validateDagsSearch } from '../dags/search'
import { DagPage } from './DagPage'

/** /dags/$name: a DAG's graph, versions and instances. */
export const dagRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/dags/$name',
  validateSearch: validateDagsSearch,
  component: DagPage,
})
