import { formatTime } from './timeFormat'

interface RefreshToggleProps {
  live: boolean
  onChange: (live: boolean) => void
  /** Seconds between refreshes. */
  every: number
  /** When the data shown was fetched (ms since the epoch; 0: not yet). */
  updatedAt: number
  fetching: boolean
}

/** Pauses and resumes a page's auto-refresh, and says when it last ran. */
export function RefreshToggle({ live, onChange, every, updatedAt, fetching }: RefreshToggleProps) {
  return (
    <div className="refresh">
      <span className="muted">
        {fetching ? 'Refreshing…' : updatedAt ? `Updated ${formatTime(new Date(updatedAt)).slice(11)}` : ''}
      </span>
      <button type="button" aria-pressed={!live} onClick={() => onChange(!live)} title={`Auto-refresh every ${every}s`}>
        {/* "refresh": a page may also pause or resume what it shows (a run, a schedule). */}
        {live ? '❚❚ Pause refresh' : '▶ Resume refresh'}
      </button>
    </div>
  )
}
