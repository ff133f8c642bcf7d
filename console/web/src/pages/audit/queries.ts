import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { listAudit, type AuditFilter } from '../../api/audit'
import { useAccess } from '../../components/access'
import { useNamespaces } from '../root/queries'

/** How often the audit page refreshes while it is live. */
export const refreshMs = 5000

/** Query keys of the audit page. */
export const auditKeys = {
  all: ['audit'] as const,
  page: (filter: AuditFilter, size: number, token: string | undefined) =>
    [...auditKeys.all, filter, size, token ?? ''] as const,
}

/** A page of the audit log; read once namespace is known (enabled), refreshed while live. */
export function useAuditPage(
  filter: AuditFilter,
  size: number,
  token: string | undefined,
  live: boolean,
  enabled: boolean,
) {
  return useQuery({
    queryKey: auditKeys.page(filter, size, token),
    queryFn: ({ signal }) => listAudit(filter, size, token, signal),
    placeholderData: keepPreviousData,
    refetchInterval: live ? refreshMs : false,
    enabled,
  })
}

/** The namespaces whose audit log the user may read. */
export interface AuditNamespaces {
  /** Whether the user reads every namespace's entries at once (a cluster admin). */
  all: boolean
  /** The namespaces the user administers (undefined while they load). */
  names: string[] | undefined
  error: unknown
}

/** The namespaces the audit page offers: those the user is an admin of, and every one for a cluster admin. */
export function useAuditNamespaces(): AuditNamespaces {
  const access = useAccess()
  const list = useNamespaces()
  return {
    all: access.clusterAdmin,
    names: list.data?.map((n) => n.name).filter((n) => access.can(n, 'admin')),
    error: list.error,
  }
}
