import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { RunPage } from './RunPage'

/** /namespaces/$namespace/runs/$workflowId/$runId: one run, its history and actions. */
export const runRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/runs/$workflowId/$runId',
  component: RunPage,
})
