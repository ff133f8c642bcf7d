import { path, request } from './client'

// Access control: who the caller is, logging in and out of a session, and
// a namespace's quotas. A server without users serves everyone as
// "anonymous", a cluster admin, and says access_control false.

/** What a grant allows in a namespace (access.Role). */
export type Role = 'reader' | 'writer' | 'operator' | 'admin' | 'worker'

/** GET /whoami: the caller, the roles they hold, and whether the server controls access. */
export interface WhoAmI {
  name: string
  kind: 'user' | 'service' | 'anonymous' | 'node' | string
  cluster_admin?: boolean
  /** The roles held, by namespace. */
  grants?: Record<string, Role[]>
  access_control: boolean
}

/** POST /login's answer for a session: the cookie carries the session. */
export interface LoginResponse {
  expires_at: string
  identity: Omit<WhoAmI, 'access_control'>
}

/** A namespace's quotas (api.Quotas): an absent or zero field is no bound. */
export interface Quotas {
  starts_per_second?: number
  start_burst?: number
  open_runs?: number
  /** Bytes. */
  max_payload?: number
}

/** GET /whoami. */
export function whoami(signal?: AbortSignal): Promise<WhoAmI> {
  return request('GET', '/whoami', { signal })
}

/** POST /login: a session cookie for the name and password (401 unauthenticated when they are wrong). */
export function login(name: string, password: string): Promise<LoginResponse> {
  return request('POST', '/login', { body: { name, password, session: true } })
}

/** POST /logout: revokes the session and clears its cookie. */
export function logout(): Promise<void> {
  return request('POST', '/logout', { body: {} })
}

/** GET /namespaces/{ns}/quotas. */
export function getQuotas(namespace: string, signal?: AbortSignal): Promise<Quotas> {
  return request('GET', path`/namespaces/${namespace}/quotas`, { signal })
}

/** PUT /whoami/password's answer: how many of the user's other login sessions ended. */
export interface ChangePasswordResponse {
  sessions_ended: number
}

/**
 * PUT /whoami/password: the caller's own password, given the current one
 * (400 invalid_argument naming current_password when it is wrong; 429 when
 * too many were wrong). The user's other sessions end; this one stays.
 */
export function changePassword(current: string, next: string): Promise<ChangePasswordResponse> {
  return request('PUT', '/whoami/password', { body: { current_password: current, new_password: next } })
}
