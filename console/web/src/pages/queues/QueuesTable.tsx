import { Fragment, useState, type ReactNode } from 'react'
import type { PollerInfo, QueueInfo } from '../../api/types'
import { StatusBadge } from '../../components/StatusBadge'
import { parseTime } from '../../components/timeFormat'
import { useNow } from '../../components/useNow'
import { ago } from '../cluster/age'
import { formatPercent } from '../../components/percent'
import { pollingNow, syncMatchRate, type QueueGroup } from './queries'

/** Pollers listed per queue before a "show all". */
const shownPollers = 10

interface QueuesTableProps {
  groups: QueueGroup[]
  /** When the queues were fetched (ms since the epoch). */
  updatedAt: number
}

/**
 * The queues, a group of rows per name: a row per kind (workflow, step) with
 * its backlog and sync-match rate, and a row per worker polling it.
 */
export function QueuesTable({ groups, updatedAt }: QueuesTableProps) {
  // The ages grow every second, and count from no earlier than the fetch.
  const now = Math.max(useNow(1000), updatedAt)
  // The queues (name and kind) whose pollers are all shown.
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set())
  const toggle = (key: string) =>
    setExpanded((s) => {
      const next = new Set(s)
      if (!next.delete(key)) next.add(key)
      return next
    })

  return (
    <div className="table-wrap">
      <table className="table queues-table">
        <caption className="visually-hidden">
          Task queues: a row per kind of each queue and per worker that polled it in the last 5 minutes
        </caption>
        <thead>
          <tr>
            <th scope="col">Queue</th>
            <th scope="col">Kind</th>
            <th scope="col" className="num">
              Backlog
            </th>
            <th scope="col" title="Tasks handed straight to a waiting worker, of all tasks">
              Sync match
            </th>
            <th scope="col">Worker</th>
            <th scope="col">Node</th>
            <th scope="col">Last seen</th>
            <th scope="col">Polling now</th>
          </tr>
        </thead>
        {groups.map((g) => {
          const lists = g.kinds.map((q) => {
            const key = `${q.name}\u0000${q.kind}`
            const all = q.pollers ?? []
            const open = expanded.has(key) || all.length <= shownPollers
            return { q, key, all, shown: open ? all : all.slice(0, shownPollers), more: all.length > shownPollers }
          })
          // A row per shown poller (at least one), and one for the show all button.
          const rows = lists.map((l) => Math.max(1, l.shown.length) + (l.more ? 1 : 0))
          const groupRows = rows.reduce((a, b) => a + b, 0)
          return (
            <tbody key={g.name}>
              {lists.map(({ q, key, all, shown, more }, i) => (
                <Fragment key={key}>
                  {(shown.length > 0 ? shown : [undefined]).map((p, j) => (
                    <tr key={p ? `${p.identity}\u0000${p.node ?? ''}` : 'none'}>
                      {i === 0 && j === 0 && (
                        <td rowSpan={groupRows} className="queue-name group-end strong">
                          {g.name}
                        </td>
                      )}
                      {j === 0 && <KindCells q={q} rows={rows[i]!} last={i === lists.length - 1} />}
                      {p ? (
                        <PollerCells p={p} now={now} />
                      ) : (
                        <td colSpan={4} className="muted">
                          No worker polled in the last 5 minutes.
                        </td>
                      )}
                    </tr>
                  ))}
                  {more && (
                    <tr>
                      <td colSpan={4}>
                        <button type="button" className="small" onClick={() => toggle(key)}>
                          {expanded.has(key) ? `Show the first ${shownPollers}` : `Show all ${all.length} workers`}
                          <span className="visually-hidden">
                            {' '}
                            of {q.kind} queue {q.name}
                          </span>
                        </button>
                      </td>
                    </tr>
                  )}
                </Fragment>
              ))}
            </tbody>
          )
        })}
      </table>
    </div>
  )
}

/** A queue kind's cells, spanning the rows of its pollers; the last kind's end the group. */
function KindCells({ q, rows, last }: { q: QueueInfo; rows: number; last: boolean }) {
  const rate = syncMatchRate(q)
  const starved = q.backlog > 0 && pollingNow(q.pollers) === 0
  const end = last ? 'group-end' : undefined
  return (
    <>
      <td rowSpan={rows} className={end}>
        {q.kind === 'workflow' ? 'Workflow' : q.kind === 'step' ? 'Step' : q.kind}
      </td>
      <td rowSpan={rows} className={`num${last ? ' group-end' : ''}`}>
        {q.backlog.toLocaleString()}
        {starved && (
          <div>
            <span className="tag tag-warn">no worker polling</span>
          </div>
        )}
      </td>
      <td rowSpan={rows} className={`nowrap${last ? ' group-end' : ''}`}>
        {rate === undefined ? (
          <span className="muted" title="No task came to this queue yet">
            —
          </span>
        ) : (
          <>
            <span className="strong">{formatPercent(rate)}</span>
            <div className="small muted">
              {q.sync_matched.toLocaleString()} matched, {q.backlogged.toLocaleString()} backlogged
            </div>
          </>
        )}
      </td>
    </>
  )
}

/** A poller's cells: who, where, when last seen, and whether it polls now. */
function PollerCells({ p, now }: { p: PollerInfo; now: number }) {
  return (
    <>
      <td className="mono">{p.identity}</td>
      <td className="mono">{p.node || <span className="muted">—</span>}</td>
      <td className="nowrap">
        <AgeTime iso={p.last_seen}>{ago(p.last_seen, now)}</AgeTime>
      </td>
      <td>
        <StatusBadge status={p.polling ? 'polling' : 'idle'} />
      </td>
    </>
  )
}

/** A relative time, with the exact time on hover and for assistive technology. */
function AgeTime({ iso, children }: { iso: string; children: ReactNode }) {
  const d = parseTime(iso)
  if (!d) return <span className="muted">—</span>
  return (
    <time dateTime={d.toISOString()} title={d.toISOString()}>
      {children}
    </time>
  )
}
