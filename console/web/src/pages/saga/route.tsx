import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { SagaPage } from './SagaPage'

/** /namespaces/$namespace/sagas/$id: a saga, its steps, tryouts and timeline, and an operator's actions. */
export const sagaRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/sagas/$id',
  component: SagaPage,
})
