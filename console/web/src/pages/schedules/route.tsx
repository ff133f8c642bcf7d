import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { SchedulesPage } from './SchedulesPage'

/** /namespaces/$namespace/schedules: the schedules of a namespace; create one. */
export const schedulesRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/schedules',
  component: SchedulesPage,
})
