import { formatAge, formatTime, parseTime } from './timeFormat'

/** A time in local wall-clock form, with its exact UTC value on hover. */
export function Time({
  value,
  millis = false,
  age = false,
}: {
  value: string | undefined
  millis?: boolean
  age?: boolean
}) {
  const d = parseTime(value)
  if (!d) return <span className="muted">—</span>
  return (
    <time dateTime={d.toISOString()} title={d.toISOString()}>
      {formatTime(d, millis)}
      {age && <span className="muted"> ({formatAge(d)})</span>}
    </time>
  )
}
