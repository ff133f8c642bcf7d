import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { NamespacesPage } from './NamespacesPage'

/** /namespaces: every namespace, with its retention; create and edit them. */
export const namespacesRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces',
  component: NamespacesPage,
})
