import type { CatchupPolicy, Duration, OverlapPolicy } from '../../api/types'

// How the schedule pages write and read a schedule's parts: its overlap
// policy, and durations as Go writes them ("1h30m").

/** What each overlap policy does, as the form and the detail page say it. */
export const overlapLabels: Record<OverlapPolicy, string> = {
  skip: 'Skip: drop the fire',
  buffer_one: 'Buffer one: start it when the open run closes',
  buffer_all: 'Buffer all: start each in turn',
  cancel_other: 'Cancel the open run, then start',
  terminate_other: 'Terminate the open run, then start',
  allow_all: 'Allow all: start every fire at once',
}

/** What each catch-up policy does with the fires missed while Strand was down. */
export const catchupLabels: Record<CatchupPolicy, string> = {
  latest: 'Run the latest missed fire',
  none: 'Run no missed fire',
  all: 'Run every missed fire, in turn',
}

/** The catch-up window of a schedule that names none (api.DefaultCatchupWindow). */
export const defaultCatchupWindow = 3600e9

/** Nanoseconds of each unit a duration may be written in. */
const units: Record<string, number> = {
  ns: 1,
  us: 1e3,
  µs: 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
  d: 86_400e9,
}

/**
 * Parses a duration as Go writes it ("90s", "1h30m", "1.5h"; "d" for days
 * too): nanoseconds, undefined when blank, an Error when it is not one.
 */
export function parseDuration(text: string): Duration | undefined | Error {
  const s = text.trim().replace(/\s+/g, '')
  if (s === '') return undefined
  if (s === '0') return 0
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d)/y
  let ns = 0
  let at = 0
  while (at < s.length) {
    part.lastIndex = at
    const m = part.exec(s)
    if (!m) return new Error(`"${text.trim()}" is not a duration: write it as 90s, 15m, 1h30m or 2d`)
    ns += Number(m[1]) * units[m[2]!]!
    at = part.lastIndex
  }
  return Math.round(ns)
}

/** "1h30m", "90s" → "1m30s", "250ms": a duration as parseDuration reads it. */
export function formatGoDuration(ns: Duration): string {
  if (ns === 0) return '0s'
  let rest = Math.round(ns)
  let out = ''
  for (const [suffix, n] of [
    ['h', 3600e9],
    ['m', 60e9],
    ['s', 1e9],
    ['ms', 1e6],
    ['us', 1e3],
    ['ns', 1],
  ] as const) {
    const q = Math.floor(rest / n)
    if (q > 0) {
      out += `${q}${suffix}`
      rest -= q * n
    }
  }
  return out
}
