// Time formatting shared by the pages: local wall-clock times, relative
// ages and durations.

const pad = (n: number, w = 2) => String(n).padStart(w, '0')

/** Parses an API time; undefined for an absent or Go zero time. */
export function parseTime(iso: string | undefined): Date | undefined {
  if (!iso || iso.startsWith('0001-01-01')) return undefined
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? undefined : d
}

/** "2026-11-25 14:03:07" in local time; with millis, ".412" follows. */
export function formatTime(d: Date, millis = false): string {
  const s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  return millis ? `${s}.${pad(d.getMilliseconds(), 3)}` : s
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
