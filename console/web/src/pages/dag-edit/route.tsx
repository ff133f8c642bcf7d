import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { validateDagsSearch } from '../dags/search'
import { EditDagPage, NewDagPage } from './EditorPage'

/** /dags/new: a new DAG, from an example text. */
export const dagNewRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/dags/new',
  validateSearch: validateDagsSearch,
  component: NewDagPage,
})

/** /dags/$name/edit: a DAG's current text, to change and apply as a new version. */
export const dagEditRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/dags/$name/edit',
  validateSearch: validateDagsSearch,
  component: EditDagPage,
})
