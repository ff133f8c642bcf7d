/** A schedule's state as a colored label: Active or Paused. */
export function ScheduleState({ paused }: { paused: boolean }) {
  return <span className={`badge ${paused ? 'status-paused' : 'status-active'}`}>{paused ? 'Paused' : 'Active'}</span>
}
