import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { SchedulePage } from './SchedulePage'

/** /namespaces/$namespace/schedules/$scheduleId: one schedule, its fires and actions. */
export const scheduleRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/schedules/$scheduleId',
  component: SchedulePage,
})
