/** The login page's search: where to go back to once logged in. */
export interface LoginSearch {
  next?: string
}

/**
 * Keeps next only if it is a page of the console: a path of this origin
 * ("/namespaces/default/runs?status=running"), not another site's
 * ("//evil.example") nor the login page itself.
 */
export function safeNext(v: unknown): string | undefined {
  if (typeof v !== 'string' || !v.startsWith('/') || v.startsWith('//') || v.startsWith('/\\')) return undefined
  if (v === '/login' || v.startsWith('/login?') || v.startsWith('/login#')) return undefined
  return v
}

/** Reads the search parameters, dropping any that are not valid. */
export function validateLoginSearch(raw: Record<string, unknown>): LoginSearch {
  const next = safeNext(raw.next)
  return next ? { next } : {}
}
