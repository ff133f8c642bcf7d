import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { SmInstancePage } from './SmInstancePage'

/** /statemachine-instances/$namespace/$id: an instance, its actions, variables and timeline, and its changes. */
export const smInstanceRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/statemachine-instances/$namespace/$id',
  component: SmInstancePage,
})
