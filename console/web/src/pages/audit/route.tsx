import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { AuditPage } from './AuditPage'
import { validateAuditSearch } from './search'

/** /audit: the audit log, newest first, by namespace, actor and time. */
export const auditRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/audit',
  validateSearch: validateAuditSearch,
  component: AuditPage,
})
