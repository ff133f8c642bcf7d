import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { AlertGroupPage } from './AlertGroupPage'
import { AlertGroupsPage } from './AlertGroupsPage'

/** /alert-groups: who the DAGs' alerts go to; create a group. */
export const alertGroupsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/alert-groups',
  component: AlertGroupsPage,
})

/** /alert-groups/$name: one group, its recipients, channels and recent alerts. */
export const alertGroupRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/alert-groups/$name',
  component: AlertGroupPage,
})
