import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { InstancePage } from './InstancePage'

/** The search of an instance's page: the task whose panel is open. */
export interface InstanceSearch {
  task?: string
}

/** /dag-instances/$namespace/$workflowId: a DAG instance, its tasks' states, logs and timeline. */
export const dagInstanceRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/dag-instances/$namespace/$workflowId',
  validateSearch: (raw: Record<string, unknown>): InstanceSearch =>
    typeof raw.task === 'string' && raw.task !== '' ? { task: raw.task } : {},
  component: InstancePage,
})
