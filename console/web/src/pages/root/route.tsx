import { createRootRoute, createRoute, redirect } from '@tanstack/react-router'
import { defaultNamespace } from '../../api/namespaces'
import { NotFound } from './NotFound'
import { RootPage } from './RootPage'

/** The root of the route tree: the frame every page is drawn in. */
export const rootRoute = createRootRoute({
  component: RootPage,
  notFoundComponent: NotFound,
})

/** / leads to the overview of the default namespace. */
export const indexRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/',
  beforeLoad: () => {
    throw redirect({ to: '/namespaces/$namespace/overview', params: { namespace: defaultNamespace } })
  },
})
