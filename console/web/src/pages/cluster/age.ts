import { formatAge, formatDuration, parseTime } from '../../components/timeFormat'

// Ages of heartbeats and expiries, in whole seconds under a minute: they are
// drawn again every second.

/** "3s ago", "4m 10s ago"; a time ahead of now (clock skew) is "0s ago". */
export function ago(iso: string | undefined, now: number): string {
  const d = parseTime(iso)
  if (!d) return '—'
  const ms = Math.max(0, now - d.getTime())
  return ms < 60_000 ? `${Math.floor(ms / 1000)}s ago` : formatAge(d, now)
}

/** "in 27s", "in 3m 04s", or "3s ago" once past. */
export function until(iso: string | undefined, now: number): string {
  const d = parseTime(iso)
  if (!d) return '—'
  const ms = d.getTime() - now
  if (ms < 0) return ago(iso, now)
  return ms < 60_000 ? `in ${Math.ceil(ms / 1000)}s` : `in ${formatDuration(ms)}`
}
