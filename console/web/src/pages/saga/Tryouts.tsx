import { Link } from '@tanstack/react-router'
import { Fragment } from 'react'
import { decodePayload } from '../../api/payload'
import type { SagaRecord, Tryout } from '../../api/sagas'
import type { Payload } from '../../api/types'
import { formatBytes } from '../../components/JsonView'
import { formatDuration, formatTime, parseTime } from '../../components/timeFormat'
import { OutcomeBadge } from './badges'

/** How many characters of an answer the table shows: a longer one is cut between two of its values. */
const previewChars = 160

/**
 * An answer as the table shows it: whole when it is short, else cut after
 * its last top-level value that fits ('{"ref":"H-17",…}'), never inside a
 * value; and in full (up to a point) for its title.
 */
export function answerPreview(answer: Payload | undefined): { short: string; full: string } | undefined {
  if (answer === undefined) return undefined
  const p = decodePayload(answer)
  let full: string
  let short: string | undefined
  switch (p.kind) {
    case 'json':
      full = typeof p.value === 'string' ? p.value : JSON.stringify(p.value)
      if (full.length > previewChars && typeof p.value === 'object' && p.value !== null) short = cutJSON(p.value)
      break
    case 'binary':
      full = `binary, ${p.size} bytes`
      break
    case 'document':
      full = `document ${p.id}, ${p.size} bytes: the run's history loads it`
      break
  }
  short ??= full.length > previewChars ? full.slice(0, previewChars - 1) + '…' : full
  return { short, full: full.length > 2000 ? full.slice(0, 2000) + '…' : full }
}

/** An object or array's JSON with as many of its top-level values as fit previewChars, then "…". */
function cutJSON(value: object): string {
  const array = Array.isArray(value)
  const parts = array
    ? (value as unknown[]).map((v) => JSON.stringify(v))
    : Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`)
  const [open, close] = array ? ['[', ']'] : ['{', '}']
  const kept: string[] = []
  let length = 2
  for (const part of parts) {
    if (length + part.length + 1 > previewChars - 2) break
    kept.push(part)
    length += part.length + 1
  }
  return `${open}${[...kept, '…'].join(',')}${close}`
}

/** An answer that may wrap after each comma (between two values), never inside a value that fits a line. */
function breakable(text: string) {
  return text.split(',').map((part, i) => (
    <Fragment key={i}>
      {i > 0 && (
        <>
          ,<wbr />
        </>
      )}
      {part}
    </Fragment>
  ))
}

/** The document an answer is stored as, if it is one. */
function stored(answer: Payload | undefined): { id: string; size: number } | undefined {
  if (answer === undefined) return undefined
  const p = decodePayload(answer)
  return p.kind === 'document' ? p : undefined
}

/** A tryout's idempotency key without the transaction id every key starts with. */
function shortKey(saga: SagaRecord, key: string): string {
  return key.startsWith(saga.transaction_id + '/') ? '…' + key.slice(saga.transaction_id.length) : key
}

/**
 * A time to the millisecond, without its day when it is the day the saga
 * started (which the summary says), in full on hover.
 */
function TimeOfDay({ value, day }: { value: string | undefined; day: string }) {
  const d = parseTime(value)
  if (!d) return <span className="muted">—</span>
  const s = formatTime(d, true)
  return (
    <time dateTime={d.toISOString()} title={d.toISOString()}>
      {s.startsWith(day) ? s.slice(11) : s}
    </time>
  )
}

function duration(t: Tryout, now: number): string {
  const start = parseTime(t.started)
  if (!start) return '—'
  const end = parseTime(t.ended)
  return end ? formatDuration(end.getTime() - start.getTime()) : `${formatDuration(now - start.getTime())} so far`
}

/**
 * Every attempt of every forward step and compensation (StackSaga's
 * tryouts), in the order they ended (those running last): the outcome,
 * when and how long, the idempotency key, the error and the answer.
 */
export function Tryouts({ saga, now }: { saga: SagaRecord; now: number }) {
  const started = parseTime(saga.started)
  const day = started ? formatTime(started).slice(0, 10) : ''
  return (
    <section className="card" aria-labelledby="tryouts-title">
      <div className="card-header">
        <h2 id="tryouts-title">Tryouts</h2>
        <span className="muted">
          {saga.tryouts.length} attempt{saga.tryouts.length === 1 ? '' : 's'}; idempotency keys start with the
          transaction ID
        </span>
      </div>
      {saga.tryouts.length === 0 ? (
        <p className="muted">No attempts yet.</p>
      ) : (
        // Focusable: on a narrow screen the table scrolls sideways, by keyboard too.
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Tryouts table">
          <table className="table compact saga-tryouts">
            <thead>
              <tr>
                <th scope="col">Step</th>
                <th scope="col">Phase</th>
                <th scope="col" className="num">
                  Attempt
                </th>
                <th scope="col">Outcome</th>
                <th scope="col">Started</th>
                <th scope="col" className="num">
                  Took
                </th>
                <th scope="col">Idempotency key</th>
                <th scope="col">Executor</th>
                <th scope="col">Error</th>
                <th scope="col">Answer</th>
              </tr>
            </thead>
            <tbody>
              {saga.tryouts.map((t, i) => {
                const answer = answerPreview(t.answer)
                const doc = stored(t.answer)
                return (
                  <tr key={i} data-step={t.step} data-phase={t.phase} data-attempt={t.attempt} data-outcome={t.outcome}>
                    <td className="strong nowrap">{t.step}</td>
                    <td className="nowrap">{t.phase}</td>
                    <td className="num">{t.attempt}</td>
                    <td>
                      <OutcomeBadge outcome={t.outcome} waiting={t.outcome === 'running' && !t.started} />
                    </td>
                    <td className="nowrap">
                      <TimeOfDay value={t.started} day={day} />
                    </td>
                    <td className="num nowrap">{duration(t, now)}</td>
                    <td className="mono small nowrap" title={t.idempotency_key} data-key={t.idempotency_key}>
                      {shortKey(saga, t.idempotency_key)}
                    </td>
                    <td className="nowrap">{t.executor || <span className="muted">—</span>}</td>
                    <td className="wrap" style={{ minWidth: '14rem' }}>
                      {t.error ? (
                        <>
                          {t.error}
                          {t.error_type && <div className="muted small mono">{t.error_type}</div>}
                        </>
                      ) : (
                        <span className="muted">—</span>
                      )}
                    </td>
                    <td className="saga-answer">
                      {doc ? (
                        // Stored apart: the run's history loads it.
                        <Link
                          to="/namespaces/$namespace/runs/$workflowId/$runId"
                          params={{ namespace: saga.namespace, workflowId: saga.id, runId: saga.run_id }}
                          title={answer?.full}
                          className="inline-link small"
                        >
                          document, {formatBytes(doc.size)}
                        </Link>
                      ) : answer ? (
                        <code className="small answer" title={answer.full}>
                          {breakable(answer.short)}
                        </code>
                      ) : (
                        <span className="muted">—</span>
                      )}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}
