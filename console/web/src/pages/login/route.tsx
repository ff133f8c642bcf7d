import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { LoginPage } from './LoginPage'
import { validateLoginSearch } from './search'

/** /login: a user name and password make a session, then back to the page the user was on (next). */
export const loginRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/login',
  validateSearch: validateLoginSearch,
  component: LoginPage,
})
