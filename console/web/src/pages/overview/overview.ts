import type { MinuteStats, Overview, TypeStats } from '../../api/types'
import { parseTime } from '../../components/timeFormat'

// What the overview page makes of the API's overview: the chart's points,
// the hour's totals, and the workflow types worth a look.

/**
 * The chart's series: what each counts, its label and the CSS variable it is
 * drawn with. The runs started are bars, how runs closed lines over them.
 */
export const chartSeries = [
  { key: 'started', label: 'Started', color: '--info', symbol: 'rect' },
  { key: 'completed', label: 'Completed', color: '--ok', symbol: 'circle' },
  { key: 'failed', label: 'Failed or timed out', color: '--bad', symbol: 'triangle' },
] as const

/** A minute's runs as the chart draws them: failed counts the timed out too. */
export interface MinutePoint {
  /** The start of the minute (ms since the epoch). */
  time: number
  started: number
  completed: number
  failed: number
}

/** The minutes as the chart draws them, the oldest first. */
export function minutePoints(minutes: MinuteStats[]): MinutePoint[] {
  return minutes.map((m) => ({
    time: Date.parse(m.time),
    started: m.started,
    completed: m.completed,
    failed: m.failed + m.timed_out,
  }))
}

/** The counts of the hour: the minutes summed. */
export type Totals = Omit<MinuteStats, 'time'>

export function totals(minutes: MinuteStats[]): Totals {
  const t: Totals = {
    started: 0,
    completed: 0,
    failed: 0,
    timed_out: 0,
    canceled: 0,
    terminated: 0,
    continued_as_new: 0,
  }
  for (const m of minutes) {
    for (const k of Object.keys(t) as (keyof Totals)[]) t[k] += m[k]
  }
  return t
}

/**
 * When counting started, if it started within the hour shown (after its
 * first minute): the minutes before it are empty for want of counts.
 */
export function countingSince(o: Overview): Date | undefined {
  const since = parseTime(o.since)
  const first = parseTime(o.minutes?.[0]?.time)
  return since && first && since.getTime() > first.getTime() ? since : undefined
}

/** Types listed in each top list. */
export const topTypes = 5

/** The types with closed runs, the slowest on average first. */
export function slowestTypes(types: TypeStats[]): TypeStats[] {
  return types
    .filter((t) => t.closed > 0)
    .sort((a, b) => b.mean_duration - a.mean_duration || b.max_duration - a.max_duration)
    .slice(0, topTypes)
}

/** The types with failed runs, the most failed first (then the highest rate). */
export function failingTypes(types: TypeStats[]): TypeStats[] {
  return types
    .filter((t) => t.failed > 0)
    .sort((a, b) => b.failed - a.failed || b.failed / b.closed - a.failed / a.closed)
    .slice(0, topTypes)
}
