import type { Duration } from '../../api/types'
import { formatNanos } from '../../components/timeFormat'

// A namespace's retention is a Go time.Duration: nanoseconds in JSON. The
// console shows it in its largest whole unit and takes it in hours or days.

const minute = 60e9
const hour = 60 * minute
const day = 24 * hour

/** The units a retention is entered in, in nanoseconds. */
export const retentionUnits = { hours: hour, days: day } as const

export type RetentionUnit = keyof typeof retentionUnits

/** The shortest retention the server takes (store.MinRetention). */
const minRetention = minute

/** Well under the longest time.Duration (about 106,751 days). */
const maxRetention = 100_000 * day

/** "7d", "36h", "90m": a retention in its largest whole unit ("default" for none). */
export function formatRetention(ns: Duration | undefined): string {
  if (!ns) return 'default'
  const units = [
    ['d', day],
    ['h', hour],
    ['m', minute],
  ] as const
  for (const [suffix, n] of units) {
    if (ns % n === 0) return `${ns / n}${suffix}`
  }
  return formatNanos(ns)
}

/** What a retention field holds: a number as typed, and its unit. */
export interface RetentionDraft {
  amount: string
  unit: RetentionUnit
}

/** The draft that shows a retention: whole days if it is, else hours. */
export function retentionDraft(ns: Duration | undefined): RetentionDraft {
  if (!ns) return { amount: '', unit: 'days' }
  if (ns % day === 0) return { amount: String(ns / day), unit: 'days' }
  return { amount: String(Number((ns / hour).toFixed(4))), unit: 'hours' }
}

/** The nanoseconds of a draft: undefined when blank, an Error when not valid. */
export function parseRetention(d: RetentionDraft): Duration | undefined | Error {
  const s = d.amount.trim()
  if (s === '') return undefined
  const n = Number(s)
  if (!Number.isFinite(n) || n <= 0) return new Error(`Retention: want a positive number of ${d.unit}.`)
  const ns = Math.round(n * retentionUnits[d.unit])
  if (ns < minRetention) return new Error('Retention: at least 1 minute.')
  if (ns > maxRetention) return new Error(`Retention: at most ${maxRetention / retentionUnits[d.unit]} ${d.unit}.`)
  return ns
}
