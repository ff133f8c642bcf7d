import { getRouteApi, Link } from '@tanstack/react-router'
import { useState } from 'react'
import type { ScheduleSummary } from '../../api/types'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Pager, usePages } from '../../components/Pager'
import { RefreshToggle } from '../../components/RefreshToggle'
import { Time } from '../../components/Time'
import { refreshMs, useSchedules } from './queries'
import { ScheduleDialog } from './ScheduleDialog'
import { Calendar } from './Calendar'
import { ScheduleState } from './ScheduleState'

const route = getRouteApi('/namespaces/$namespace/schedules')

/** The schedules of a namespace, a page at a time; a dialog creates one. */
export function SchedulesPage() {
  const { namespace } = route.useParams()
  const [live, setLive] = useState(true)
  const [creating, setCreating] = useState(false)
  // Schedules are an operator's to make.
  const mayCreate = useAccess().can(namespace, 'operator')
  // The id of the schedule the dialog created, read out politely.
  const [created, setCreated] = useState<string | null>(null)

  return (
    <section className="page" aria-labelledby="schedules-title">
      <div className="page-header">
        <h1 id="schedules-title">Schedules</h1>
        <span className="muted">namespace {namespace}</span>
        <div className="spacer" />
        <span role="status">
          {created && (
            <>
              Schedule{' '}
              <Link
                to="/namespaces/$namespace/schedules/$scheduleId"
                params={{ namespace, scheduleId: created }}
                className="strong"
              >
                {created}
              </Link>{' '}
              created.
            </>
          )}
        </span>
        {mayCreate && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            Create schedule…
          </button>
        )}
      </div>
      {/* A new namespace starts the list again at its first page. */}
      <SchedulesList key={namespace} namespace={namespace} live={live} setLive={setLive} />
      {creating && (
        <ScheduleDialog namespace={namespace} onClose={() => setCreating(false)} onSaved={(id) => setCreated(id)} />
      )}
    </section>
  )
}

/** The table with its pager: the tokens of the pages before this one are a stack. */
function SchedulesList(props: { namespace: string; live: boolean; setLive: (live: boolean) => void }) {
  const { namespace, live, setLive } = props
  const [pages, setPages] = usePages()
  const q = useSchedules(namespace, pages.token, live)
  const next = q.data?.next_page_token
  const schedules = q.data?.schedules ?? []
  const paged = pages.before.length > 0 || !!next
  return (
    <>
      <div className="toolbar">
        {paged ? (
          <Pager pages={pages} setPages={setPages} next={next} waiting={q.isPlaceholderData} />
        ) : (
          <span className="muted">
            {q.data && `${schedules.length.toLocaleString()} schedule${schedules.length === 1 ? '' : 's'}`}
          </span>
        )}
        <RefreshToggle
          live={live}
          onChange={setLive}
          every={refreshMs / 1000}
          updatedAt={q.dataUpdatedAt}
          fetching={q.isFetching}
        />
      </div>
      <ErrorMessage error={q.error} title="Listing schedules failed" />
      {q.isPending && <p className="muted">Loading schedules…</p>}
      {q.data &&
        (schedules.length > 0 ? (
          <SchedulesTable namespace={namespace} schedules={schedules} />
        ) : (
          <div className="empty">
            <p className="strong">No schedules in this namespace.</p>
            <p>A schedule starts a workflow on a calendar, such as every night at 2:00. Create one to start.</p>
          </div>
        ))}
    </>
  )
}

/** A page of schedules; each id links to its schedule. */
function SchedulesTable({ namespace, schedules }: { namespace: string; schedules: ScheduleSummary[] }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Schedule ID</th>
            <th scope="col">Workflow type</th>
            <th scope="col">Calendar</th>
            <th scope="col">State</th>
            <th scope="col">Next fire</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {schedules.map((s) => (
            <tr key={s.schedule_id}>
              <td>
                <Link
                  to="/namespaces/$namespace/schedules/$scheduleId"
                  params={{ namespace, scheduleId: s.schedule_id }}
                  className="strong"
                >
                  {s.schedule_id}
                </Link>
              </td>
              <td>{s.workflow_type}</td>
              <td>
                <Calendar spec={s.spec} />
              </td>
              <td>
                <ScheduleState paused={s.paused ?? false} />
              </td>
              <td>
                {s.paused ? (
                  <span className="muted">—</span>
                ) : (
                  <Time value={s.next_fire} age timeZone={s.spec?.time_zone || 'UTC'} />
                )}
              </td>
              <td>
                <Time value={s.create_time} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
