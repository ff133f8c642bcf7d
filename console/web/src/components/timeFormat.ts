// Time formatting shared by the pages: wall-clock times with their zone,
// relative ages and durations.

const pad = (n: number, w = 2) => String(n).padStart(w, '0')

/** Parses an API time; undefined for an absent or Go zero time. */
export function parseTime(iso: string | undefined): Date | undefined {
  if (!iso || iso.startsWith('0001-01-01')) return undefined
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? undefined : d
}

/** The formatters of the zones times are shown in, by zone ('' for the browser's own). */
const formatters = new Map<string, Intl.DateTimeFormat>()

/** The parts of d's wall-clock time in timeZone (the browser's own when undefined), and the zone's short name. */
function wallClock(d: Date, timeZone: string | undefined): Record<string, string> {
  const key = timeZone ?? ''
  let f = formatters.get(key)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'short',
    })
    formatters.set(key, f)
  }
  return Object.fromEntries(f.formatToParts(d).map((p) => [p.type, p.value]))
}

/**
 * "2026-11-25 14:03:07 UTC": the wall-clock time and its zone's short name
 * ("UTC", "GMT+1"), in the browser's zone; in timeZone (an IANA name: a
 * schedule's), that name follows instead ("2026-11-26 02:00:00
 * Europe/Berlin"). With millis, ".412" follows the seconds.
 */
export function formatTime(d: Date, millis = false, timeZone?: string): string {
  let p: Record<string, string>
  let zone = timeZone
  try {
    p = wallClock(d, timeZone)
  } catch {
    // A zone this browser does not know: the browser's own, named so.
    p = wallClock(d, undefined)
    zone = undefined
  }
  const ms = millis ? `.${pad(d.getMilliseconds(), 3)}` : ''
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}${ms} ${zone ?? p.timeZoneName ?? ''}`.trimEnd()
}

/** The short name of the browser's zone at d ("UTC", "GMT+1"). */
export function zoneName(d: Date = new Date()): string {
  return wallClock(d, undefined).timeZoneName ?? ''
}

/** "850ms", "4.2s", "3m 04s", "2h 05m", "3d 4h". */
export function formatDuration(ms: number): string {
  if (ms < 0) ms = 0
  if (ms < 1000) return `${Math.round(ms)}ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)}s`
  const s = Math.floor(ms / 1000)
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${pad(Math.floor(s / 60) % 60)}m`
  return `${Math.floor(s / 86_400)}d ${Math.floor(s / 3600) % 24}h`
}

/** A duration the API gives in nanoseconds. */
export function formatNanos(ns: number): string {
  return formatDuration(ns / 1e6)
}

/**
 * A configured duration the API gives in nanoseconds, in whole units: "5 s",
 * "1 min 30 s", "2 h", "250 ms" (a step's timeouts, a retry's intervals).
 */
export function formatSetting(ns: number): string {
  if (!ns) return '0 s'
  let ms = Math.round(ns / 1e6)
  if (ms === 0) return `${Math.round(ns / 1e3)} µs`
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['min', 60_000],
    ['s', 1000],
    ['ms', 1],
  ]
  const parts: string[] = []
  for (const [name, size] of units) {
    if (ms >= size) {
      parts.push(`${Math.floor(ms / size)} ${name}`)
      ms %= size
    }
  }
  return parts.join(' ')
}

/** "12s ago", "5m ago", "in 3m". */
export function formatAge(d: Date, now: number = Date.now()): string {
  const ms = now - d.getTime()
  return ms >= 0 ? `${formatDuration(ms).replace(/\.\d+s$/, 's')} ago` : `in ${formatDuration(-ms)}`
}

/** A datetime-local input's value ("2026-11-25T14:03") for a time. */
export function toLocalInput(iso: string | undefined): string {
  const d = parseTime(iso)
  if (!d) return ''
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`
}

/** The RFC 3339 time of a datetime-local input's value ('' for none). */
export function fromLocalInput(value: string): string {
  if (!value) return ''
  const d = new Date(value)
  return Number.isNaN(d.getTime()) ? '' : d.toISOString()
}
