import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { BatchesPage } from './BatchesPage'

/** /namespaces/$namespace/batches: the batch operations of a namespace. */
export const batchesRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/batches',
  component: BatchesPage,
})
