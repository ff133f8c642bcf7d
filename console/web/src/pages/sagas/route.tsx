import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { SagasPage } from './SagasPage'
import { validateSagasSearch } from './search'

/** /namespaces/$namespace/sagas: the sagas of a namespace, by name, state and start time, and batches over them. */
export const sagasRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/sagas',
  validateSearch: validateSagasSearch,
  component: SagasPage,
})
