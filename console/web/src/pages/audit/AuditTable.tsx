import { Link } from '@tanstack/react-router'
import { Fragment, useState } from 'react'
import type { AuditEntry } from '../../api/audit'
import { JsonView } from '../../components/JsonView'
import { Time } from '../../components/Time'
import { actionWords } from './actionWords'

/** The columns of the table, for the detail row that spans them. */
const columns = 7

/** The entries, newest first; each opens a row below it with its request's query and body. */
export function AuditTable({ entries }: { entries: AuditEntry[] }) {
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set())
  const toggle = (id: string) =>
    setOpen((s) => {
      const next = new Set(s)
      if (next.has(id)) next.delete(id)
      else next.add(id)
      return next
    })
  return (
    <div className="table-wrap">
      <table className="table compact audit-table">
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Actor</th>
            <th scope="col">Remote</th>
            <th scope="col">Action</th>
            <th scope="col">Namespace</th>
            <th scope="col">Status</th>
            <th scope="col">Detail</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <Fragment key={e.id}>
              <EntryRow entry={e} open={open.has(e.id)} onToggle={() => toggle(e.id)} />
              {open.has(e.id) && e.detail !== undefined && (
                <tr id={detailId(e)} className="audit-detail">
                  <td colSpan={columns}>
                    <JsonView value={e.detail} />
                  </td>
                </tr>
              )}
            </Fragment>
          ))}
        </tbody>
      </table>
    </div>
  )
}

function detailId(e: AuditEntry): string {
  return `audit-detail-${e.id}`
}

/** An entry's row; its Detail button opens the row below. */
function EntryRow({ entry: e, open, onToggle }: { entry: AuditEntry; open: boolean; onToggle: () => void }) {
  return (
    <tr data-entry={e.id} data-actor={e.actor} data-action={e.action} data-status={e.status}>
      <td className="nowrap">
        <Time value={e.time} millis />
      </td>
      <td className={e.actor === '(unauthenticated)' ? 'muted' : undefined}>{e.actor}</td>
      <td className="mono nowrap">{e.remote ?? <span className="muted">—</span>}</td>
      <td className="audit-action" title={e.action}>
        <Action entry={e} />
      </td>
      <td>{e.namespace ?? <span className="muted">—</span>}</td>
      <td className="nowrap">
        <HttpStatus status={e.status} />
        <Repeats entry={e} />
      </td>
      <td>
        {e.detail === undefined ? (
          <span className="muted">—</span>
        ) : (
          <button
            type="button"
            className="small"
            aria-expanded={open}
            aria-controls={open ? detailId(e) : undefined}
            onClick={onToggle}
          >
            {open ? 'Hide' : 'Show'}
            <span className="visually-hidden"> the detail</span>
          </button>
        )}
      </td>
    </tr>
  )
}

/**
 * What the entry did, in words, and what it acted on ("Signal run order-1"):
 * a run links to its page. The route as the API names it is the cell's
 * title; a route the console has no words for is shown as it is.
 */
function Action({ entry: e }: { entry: AuditEntry }) {
  const { words, target, known } = actionWords(e)
  return (
    <>
      {known ? words : <span className="mono">{breakable(words)}</span>}
      {target && (
        <>
          {' '}
          <Target entry={e} target={target} />
        </>
      )}
    </>
  )
}

/** A path that may break before each of its slashes but the first. */
function breakable(path: string) {
  return path.split('/').map((part, i) => (
    <Fragment key={i}>
      {i > 1 && <wbr />}
      {i > 0 && '/'}
      {part}
    </Fragment>
  ))
}

/** What the entry acted on: a workflow's run links to the run's page. */
function Target({ entry: e, target }: { entry: AuditEntry; target: string }) {
  if (e.namespace && e.run_id && e.target && e.action.includes('/workflows/{workflow_id}')) {
    return (
      <Link
        to="/namespaces/$namespace/runs/$workflowId/$runId"
        params={{ namespace: e.namespace, workflowId: e.target, runId: e.run_id }}
        className="mono id"
        title={`run ${e.run_id}`}
      >
        {e.target}
      </Link>
    )
  }
  return <span className="mono id">{target}</span>
}

/** The reasons of the statuses the API answers with. */
const reasons: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No content',
  400: 'Bad request',
  401: 'Unauthenticated',
  403: 'Permission denied',
  404: 'Not found',
  409: 'Conflict',
  412: 'Precondition failed',
  413: 'Payload too large',
  429: 'Too many requests',
  500: 'Internal error',
  503: 'Unavailable',
  504: 'Timed out',
}

/**
 * How many refused calls a folded entry stands for: the server writes the
 * first refusal of a source at once and the repeats within a minute as one
 * entry whose detail counts them.
 */
function Repeats({ entry: e }: { entry: AuditEntry }) {
  const count = (e.detail as { count?: unknown } | undefined)?.count
  if (typeof count !== 'number' || count < 1) return null
  return (
    <span className="muted audit-repeats" title="refused calls like this one, counted into one entry">
      {' '}
      ×{count}
    </span>
  )
}

/** An answer's HTTP status, colored by its class: done (2xx), refused (4xx), failed (5xx). */
function HttpStatus({ status }: { status: number }) {
  const kind = status >= 500 ? 'failed' : status >= 400 ? 'refused' : 'done'
  const reason = reasons[status]
  return (
    <span className={`badge http-${kind}`} title={reason}>
      {status}
      {reason && <span className="visually-hidden"> {reason}</span>}
    </span>
  )
}
