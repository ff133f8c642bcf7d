import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { TaskPage } from './TaskPage'

/** /namespaces/$namespace/tasks/$taskId: one human task, its form and its record. */
export const taskRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/tasks/$taskId',
  component: TaskPage,
})
