import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { BatchPage } from './BatchPage'

/** /namespaces/$namespace/batches/$batchId: one batch, its progress and a result per run. */
export const batchRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/batches/$batchId',
  component: BatchPage,
})
