import { createRootRoute, createRoute, redirect } from '@tanstack/react-router'
import { ApiError } from '../../api/client'
import { defaultNamespace } from '../../api/namespaces'
import { whoamiQuery } from '../../components/access'
import { queryClient } from '../../queryClient'
import { NotFound } from './NotFound'
import { RootPage } from './RootPage'

/**
 * The root of the route tree: the frame every page is drawn in. Before any
 * page but the login page it reads who the user is (once): a server that
 * controls access answers 401 without a session, and the user goes to log
 * in, to come back to this page after.
 */
export const rootRoute = createRootRoute({
  component: RootPage,
  notFoundComponent: NotFound,
  beforeLoad: async ({ location }) => {
    if (location.pathname === '/login') return
    try {
      await queryClient.ensureQueryData(whoamiQuery)
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        throw redirect({ to: '/login', search: location.href === '/' ? {} : { next: location.href }, replace: true })
      }
      // Any other failure: the pages load, and say what the server answers them.
    }
  },
})

/** / leads to the overview of the default namespace. */
export const indexRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/',
  beforeLoad: () => {
    throw redirect({ to: '/namespaces/$namespace/overview', params: { namespace: defaultNamespace } })
  },
})
