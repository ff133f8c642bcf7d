import { listedSagaStates, type SagaFilter, type SagaState } from '../../api/sagas'

/** How far back the list looks: sagas started in the last hour, day or week. */
export type Since = 'hour' | 'day' | 'week'

/** Each period in milliseconds, in the order the filter offers them. */
export const sinceMs: Record<Since, number> = { hour: 3_600_000, day: 86_400_000, week: 7 * 86_400_000 }

/** The sagas page's filters, as its URL's search parameters hold them. */
export interface SagasSearch {
  name?: string
  state?: SagaState
  since?: Since
}

/** Reads the search parameters, dropping any that are not valid. */
export function validateSagasSearch(raw: Record<string, unknown>): SagasSearch {
  const out: SagasSearch = {}
  const name = typeof raw.name === 'string' ? raw.name.trim() : ''
  if (name) out.name = name
  const state = listedSagaStates.find((s) => s === raw.state)
  if (state) out.state = state
  const since = (Object.keys(sinceMs) as Since[]).find((s) => s === raw.since)
  if (since) out.since = since
  return out
}

/** The API filter of the search, its start bound taken from now. */
export function toSagaFilter(s: SagasSearch, now = Date.now()): SagaFilter {
  const f: SagaFilter = {}
  if (s.name) f.name = s.name
  if (s.state) f.state = s.state
  if (s.since) f.started_after = new Date(now - sinceMs[s.since]).toISOString()
  return f
}

/** "name trip, state compensation failed, started in the last day": the filter in words ('' when it has none). */
export function describeSagaSearch(s: SagasSearch): string {
  const parts: string[] = []
  if (s.name) parts.push(`name ${s.name}`)
  if (s.state) parts.push(`state ${s.state.replaceAll('_', ' ')}`)
  if (s.since) parts.push(`started in the last ${s.since}`)
  return parts.join(', ')
}
