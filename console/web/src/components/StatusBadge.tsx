/** "continued_as_new" → "Continued as new". */
export function statusLabel(status: string): string {
  const s = status.replaceAll('_', ' ')
  return s.charAt(0).toUpperCase() + s.slice(1)
}

/** A run's (or a step's) status as a colored label. */
export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge status-${status}`}>{statusLabel(status)}</span>
}
