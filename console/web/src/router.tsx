import { createRouter } from '@tanstack/react-router'
import { alertGroupRoute, alertGroupsRoute } from './pages/alert-groups/route'
import { auditRoute } from './pages/audit/route'
import { batchRoute } from './pages/batch/route'
import { batchesRoute } from './pages/batches/route'
import { clusterRoute } from './pages/cluster/route'
import { dagRoute } from './pages/dag/route'
import { dagEditRoute, dagNewRoute } from './pages/dag-edit/route'
import { dagInstanceRoute } from './pages/dag-instance/route'
import { dagsRoute } from './pages/dags/route'
import { loginRoute } from './pages/login/route'
import { mailboxRoute } from './pages/mailbox/route'
import { taskRoute } from './pages/task/route'
import { tasksRoute } from './pages/tasks/route'
import { messagesRoute } from './pages/messages/route'
import { namespacesRoute } from './pages/namespaces/route'
import { overviewRoute } from './pages/overview/route'
import { queuesRoute } from './pages/queues/route'
import { resourcesRoute } from './pages/resources/route'
import { indexRoute, rootRoute } from './pages/root/route'
import { runRoute } from './pages/run/route'
import { runsRoute } from './pages/runs/route'
import { sagaRoute } from './pages/saga/route'
import { sagasRoute } from './pages/sagas/route'
import { smInstanceRoute } from './pages/statemachine-instance/route'
import { stateMachineRoute } from './pages/statemachine/route'
import { stateMachinesRoute } from './pages/statemachines/route'
import { scheduleRoute } from './pages/schedule/route'
import { schedulesRoute } from './pages/schedules/route'

/** Every page of the console; a new page adds its route here. */
const routeTree = rootRoute.addChildren([
  indexRoute,
  loginRoute,
  overviewRoute,
  runsRoute,
  runRoute,
  schedulesRoute,
  scheduleRoute,
  batchesRoute,
  batchRoute,
  messagesRoute,
  mailboxRoute,
  tasksRoute,
  taskRoute,
  queuesRoute,
  dagsRoute,
  dagNewRoute,
  dagRoute,
  dagEditRoute,
  dagInstanceRoute,
  alertGroupsRoute,
  alertGroupRoute,
  resourcesRoute,
  stateMachinesRoute,
  stateMachineRoute,
  smInstanceRoute,
  sagasRoute,
  sagaRoute,
  namespacesRoute,
  auditRoute,
  clusterRoute,
])

/** The console's router: code-based routes, URLs as the server serves them. */
export const router = createRouter({
  routeTree,
  scrollRestoration: true,
})

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router
  }
}
