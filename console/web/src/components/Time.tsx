import { formatAge, formatTime, parseTime } from './timeFormat'

/**
 * A time in the browser's wall-clock form with its zone ("2026-11-25
 * 14:03:07 UTC"), or in timeZone's (an IANA name, such as a schedule's)
 * with that name after it; its exact UTC value on hover.
 */
export function Time({
  value,
  millis = false,
  age = false,
  timeZone,
}: {
  value: string | undefined
  millis?: boolean
  age?: boolean
  timeZone?: string | undefined
}) {
  const d = parseTime(value)
  if (!d) return <span className="muted">—</span>
  return (
    <time dateTime={d.toISOString()} title={d.toISOString()}>
      {formatTime(d, millis, timeZone)}
      {age && <span className="muted"> ({formatAge(d)})</span>}
    </time>
  )
}
