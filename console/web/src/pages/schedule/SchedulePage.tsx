import { getRouteApi, Link } from '@tanstack/react-router'
import { useMemo, useState } from 'react'
import { ApiError } from '../../api/client'
import type { ScheduleRef } from '../../api/schedules'
import type { ScheduleDescription } from '../../api/types'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { RefreshToggle } from '../../components/RefreshToggle'
import { Time } from '../../components/Time'
import { refreshMs } from '../schedules/queries'
import { ScheduleState } from '../schedules/ScheduleState'
import { useScheduleDescription } from './queries'
import { ScheduleActions, type ActionStatus } from './ScheduleActions'
import { ActionsTaken, Backfills, Definition, NextFires, RecentActions } from './ScheduleSections'

const route = getRouteApi('/namespaces/$namespace/schedules/$scheduleId')

/** One schedule: what it does and when, its next fire times, the actions it took, and the buttons that act on it. */
export function SchedulePage() {
  const { namespace, scheduleId } = route.useParams()
  const ref: ScheduleRef = useMemo(() => ({ namespace, scheduleId }), [namespace, scheduleId])
  const [live, setLive] = useState(true)
  const [status, setStatus] = useState<ActionStatus | null>(null)
  // Pausing, triggering, backfilling, editing and deleting are an operator's.
  const mayAct = useAccess().can(namespace, 'operator')
  const q = useScheduleDescription(ref, live)
  const d = q.data

  return (
    <section className="page" aria-labelledby="schedule-title">
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/namespaces/$namespace/schedules" params={{ namespace }}>
          Schedules
        </Link>
        <span aria-hidden="true"> / </span>
        <span>{scheduleId}</span>
      </nav>
      <div className="page-header">
        <h1 id="schedule-title" className="run-title">
          {scheduleId}
        </h1>
        {d && <ScheduleState paused={d.schedule.paused ?? false} />}
        <div className="spacer" />
        <span role="status" className="muted">
          {status && 'message' in status && status.message}
        </span>
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
        {d && mayAct && <ScheduleActions schedule={d} onStatus={setStatus} />}
      </div>
      {status && 'error' in status && <ErrorMessage error={status.error} title="Triggering failed" />}
      {q.error instanceof ApiError && q.error.status === 404 && !d ? (
        <p className="empty">
          No schedule <strong>{scheduleId}</strong> in namespace {namespace}: it may have been deleted.
        </p>
      ) : (
        <ErrorMessage error={q.error} title="Describing the schedule failed" />
      )}
      {q.isPending && <p className="muted">Loading…</p>}
      {d && (
        <>
          {d.schedule.paused && <PausedNotice schedule={d} />}
          <div className="columns">
            <Definition schedule={d} />
            <NextFires schedule={d} />
          </div>
          <ActionsTaken schedule={d} />
          <Backfills schedule={d} />
          <RecentActions schedule={d} />
        </>
      )}
    </section>
  )
}

/** Who paused the schedule, when, and the note they left. */
function PausedNotice({ schedule: d }: { schedule: ScheduleDescription }) {
  return (
    <p className="notice">
      <strong>Paused</strong>
      {d.paused_by && <> by {d.paused_by}</>}
      {d.paused_at && (
        <>
          {' '}
          at <Time value={d.paused_at} />
        </>
      )}
      {d.schedule.note ? `: ${d.schedule.note}` : ''}. It takes no fire until it is unpaused.
    </p>
  )
}
