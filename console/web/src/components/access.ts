import { queryOptions, useQuery } from '@tanstack/react-query'
import { whoami, type Role, type WhoAmI } from '../api/access'

/**
 * Who the console's user is: read once (the router reads it before the
 * first page, and again after logging in).
 */
export const whoamiQuery = queryOptions({
  queryKey: ['whoami'],
  queryFn: ({ signal }) => whoami(signal),
  staleTime: Infinity,
})

/** Whether holding role allows what needs role need (access.Role.Includes). */
export function roleIncludes(role: Role, need: Role): boolean {
  switch (role) {
    case 'admin':
      return true
    case 'operator':
      return need === 'operator' || need === 'writer' || need === 'reader'
    case 'writer':
      return need === 'writer' || need === 'reader'
    case 'worker':
      return need === 'worker' || need === 'reader'
    case 'reader':
      return need === 'reader'
  }
  return false
}

/** What the user may do: a cluster admin (and anyone, on a server without access control) may do everything. */
export interface Access {
  /** The user's name ("anonymous" without access control; "" while unknown). */
  name: string
  /** What the caller is: user (who has a password), service, anonymous. */
  kind: string
  /** Whether the server controls access: users log in, roles limit them. */
  accessControl: boolean
  clusterAdmin: boolean
  /** Whether the user holds a role that includes need in namespace. */
  can: (namespace: string, need: Role) => boolean
  /** Whether the user holds a role that includes need in some namespace (what changes shared definitions needs). */
  canSomewhere: (need: Role) => boolean
}

/**
 * The access of a who-am-I answer. Unknown (the call failed, say), the
 * console offers everything and the server says no where it must.
 */
export function accessOf(me: WhoAmI | undefined): Access {
  const everything = !me || !me.access_control || me.cluster_admin === true
  const grants = me?.grants ?? {}
  return {
    name: me?.name ?? '',
    kind: me?.kind ?? '',
    accessControl: me?.access_control ?? false,
    clusterAdmin: everything,
    can: (namespace, need) => everything || (grants[namespace] ?? []).some((r) => roleIncludes(r, need)),
    canSomewhere: (need) =>
      everything || Object.values(grants).some((roles) => roles.some((r) => roleIncludes(r, need))),
  }
}

/** The user's access, from who-am-I. */
export function useAccess(): Access {
  return accessOf(useQuery(whoamiQuery).data)
}

/**
 * Whether the user may read the audit log: a cluster admin (and anyone, on
 * a server without access control) every namespace's entries, the admins
 * of a namespace that namespace's.
 */
export function mayReadAudit(access: Access): boolean {
  return access.canSomewhere('admin')
}
