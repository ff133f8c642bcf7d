import { createRoute } from '@tanstack/react-router'
import { validateDagsSearch } from '../dags/search'
import { rootRoute } from '../root/route'
import { StateMachinesPage } from './StateMachinesPage'

/** /statemachines: the state machine definitions (their instances are the namespace's of the search). */
export const stateMachinesRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/statemachines',
  validateSearch: validateDagsSearch,
  component: StateMachinesPage,
})
