import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { TasksPage } from './TasksPage'

/** The inbox's filter, as its URL holds it. */
export interface TasksSearch {
  /** open (open and claimed, the default), claimed or closed. */
  status?: string
  /** Only the tasks the user may claim or holds. */
  mine?: boolean
}

function validateTasksSearch(raw: Record<string, unknown>): TasksSearch {
  const out: TasksSearch = {}
  if (raw.status === 'claimed' || raw.status === 'closed') out.status = raw.status
  if (raw.mine === true || raw.mine === 'true') out.mine = true
  return out
}

/** /namespaces/$namespace/tasks: the human tasks inbox. */
export const tasksRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/tasks',
  validateSearch: validateTasksSearch,
  component: TasksPage,
})
