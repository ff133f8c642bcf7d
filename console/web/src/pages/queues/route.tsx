import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { QueuesPage } from './QueuesPage'

/** /namespaces/$namespace/queues: the task queues of a namespace, their backlog and their workers. */
export const queuesRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/queues',
  component: QueuesPage,
})
