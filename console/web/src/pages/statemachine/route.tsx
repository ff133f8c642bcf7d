import { createRoute } from '@tanstack/react-router'
import { validateDagsSearch } from '../dags/search'
import { rootRoute } from '../root/route'
import { StateMachinePage } from './StateMachinePage'

/** /statemachines/$type: a definition's graph with its instances per state, its states, instances, and a form to create one. */
export const stateMachineRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/statemachines/$type',
  validateSearch: validateDagsSearch,
  component: StateMachinePage,
})
