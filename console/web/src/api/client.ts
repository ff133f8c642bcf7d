// The HTTP side of the API client: one request function, and the error it
// throws when the server refuses a call.

/** The JSON body of every error response of the API. */
export interface ErrorBody {
  code: string
  message: string
  field?: string
  workflow_id?: string
  run_id?: string
}

/** A call the server answered with an error status, carrying its body. */
export class ApiError extends Error {
  readonly status: number
  readonly body: ErrorBody

  constructor(status: number, body: ErrorBody) {
    super(body.message)
    this.name = 'ApiError'
    this.status = status
    this.body = body
  }

  /** The stable error code ("not_found", "run_closed", ...). */
  get code(): string {
    return this.body.code
  }
}

/**
 * A call the server never answered: it is down, or the network between is.
 * The browser's own words for it ("Failed to fetch", "NetworkError when
 * attempting to fetch resource") say nothing to a user.
 */
export class UnreachableError extends Error {
  constructor(cause: unknown) {
    super('The server cannot be reached: it may be down, or the network to it.', { cause })
    this.name = 'UnreachableError'
  }
}

/** How the console names itself in the history of the runs (and schedules, batches) it acts on. */
export const identity = 'strand-console'

/** The API's base path; the console is served by the same server. */
const prefix = '/api/v1'

/** Escapes each value for use as one path segment. */
export function path(strings: TemplateStringsArray, ...values: string[]): string {
  return strings.reduce((out, s, i) => out + s + (i < values.length ? encodeURIComponent(values[i] ?? '') : ''), '')
}

/**
 * Every request carries it: the server refuses a change that a session
 * cookie authenticates without it (a cross-site form cannot send it).
 */
const consoleHeader = { 'X-Strand-Console': '1' }

/** Routes whose 401 is their own answer, not a sign that the session is gone. */
const ownAnswer = new Set(['/login', '/whoami'])

let unauthenticated: (() => void) | undefined

/**
 * Sets what happens when the server answers a call 401 (no session, or
 * it expired): the console sends the user to the login page. The login
 * itself, and who-am-I (which the router asks before any page), are left
 * to their callers.
 */
export function onUnauthenticated(fn: () => void): void {
  unauthenticated = fn
}

interface RequestOptions {
  body?: unknown
  query?: Record<string, string | undefined>
  signal?: AbortSignal
}

/**
 * Calls the API and decodes its JSON answer (undefined for 204). Any other
 * status throws an ApiError with the server's error body, or one made up from
 * the status when the body is not the API's; a 401 also sends the user to
 * log in (onUnauthenticated).
 */
export async function request<T>(method: string, route: string, opts: RequestOptions = {}): Promise<T> {
  let url = prefix + route
  if (opts.query) {
    const q = new URLSearchParams()
    for (const [k, v] of Object.entries(opts.query)) {
      if (v !== undefined && v !== '') q.set(k, v)
    }
    const s = q.toString()
    if (s) url += '?' + s
  }
  const init: RequestInit = {
    method,
    headers: { Accept: 'application/json', ...consoleHeader },
    signal: opts.signal ?? null,
  }
  if (opts.body !== undefined) {
    init.headers = { ...init.headers, 'Content-Type': 'application/json' }
    init.body = JSON.stringify(opts.body)
  }
  let res: Response
  try {
    res = await fetch(url, init)
  } catch (e) {
    // An abort is the caller's own (a page left, a newer query): as it is.
    if (e instanceof DOMException && e.name === 'AbortError') throw e
    throw new UnreachableError(e)
  }
  if (res.status === 204) return undefined as T
  const text = await res.text()
  if (res.status === 401 && !ownAnswer.has(route)) unauthenticated?.()
  if (!res.ok) throw new ApiError(res.status, errorBody(res, text))
  return (text ? JSON.parse(text) : undefined) as T
}

function errorBody(res: Response, text: string): ErrorBody {
  try {
    const body = JSON.parse(text) as Partial<ErrorBody>
    if (typeof body.code === 'string' && typeof body.message === 'string') return body as ErrorBody
  } catch {
    // Not the API's JSON (a proxy's page, say): report the status below.
  }
  return { code: `http_${res.status}`, message: text.trim() || `${res.status} ${res.statusText}` }
}
