import { createRouter } from '@tanstack/react-router'
import { indexRoute, rootRoute } from './pages/root/route'
import { runRoute } from './pages/run/route'
import { runsRoute } from './pages/runs/route'

/** Every page of the console; a new page adds its route here. */
const routeTree = rootRoute.addChildren([indexRoute, runsRoute, runRoute])

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
