import type { ScheduleSpec } from '../../api/types'

/** A spec's cron expressions, one a line, and its time zone. */
export function Calendar({ spec }: { spec: ScheduleSpec | undefined }) {
  const cron = spec?.cron ?? []
  if (cron.length === 0) return <span className="muted">see the schedule</span>
  return (
    <div className="calendar">
      {cron.map((c, i) => (
        <code key={i}>{c}</code>
      ))}
      {spec?.time_zone && <span className="muted small">{spec.time_zone}</span>}
    </div>
  )
}
