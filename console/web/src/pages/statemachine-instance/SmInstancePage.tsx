import { getRouteApi, Link } from '@tanstack/react-router'
import { lazy, Suspense, useMemo, useState } from 'react'
import { ApiError } from '../../api/client'
import { varsAfterActions, type SmAction, type SmDefinition, type SmInstance } from '../../api/statemachines'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Fact } from '../../components/Fact'
import { RefreshToggle } from '../../components/RefreshToggle'
import { SmStatusBadge } from '../../components/SmStatusBadge'
import { Time } from '../../components/Time'
import { smPath } from '../../components/smLayout'
import { formatDuration, parseTime } from '../../components/timeFormat'
import type { BarStatus, Gantt } from '../run/gantt'
import { namespaceSearch } from '../dags/search'
import { refreshMs, useSmInstance, useStateMachineVersion } from '../statemachines/queries'
import { ManageForm } from './ManageForm'

// ECharts is loaded with the first chart, not with the console.
const GanttChart = lazy(() => import('../run/GanttChart'))
// React Flow and dagre load with the first graph.
const StateMachineGraph = lazy(() => import('../../components/ReadableSmGraph'))

const route = getRouteApi('/statemachine-instances/$namespace/$id')

/**
 * A state machine instance: its status, state, keys and variables, its
 * actions as a table and a timeline, the variables after each action with
 * what it changed, and the changes from outside (refreshed until it
 * finished).
 */
export function SmInstancePage() {
  const { namespace, id } = route.useParams()
  const [live, setLive] = useState(true)
  const q = useSmInstance(namespace, id, live)
  const inst = q.data
  // The instance's own version: its states and moves (a later one may differ).
  const def = useStateMachineVersion(inst?.type ?? '', inst?.version ?? 0)
  const definition = def.data
  // The states it went through, for the graph to draw its path.
  const path = useMemo(
    () => (inst && definition ? smPath(definition, (inst.actions ?? []).map((a) => a.state), inst.state) : undefined),
    [inst, definition],
  )
  return (
    <section className="page" aria-labelledby="instance-title">
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/statemachines" search={namespaceSearch(namespace)}>
          State machines
        </Link>
        <span aria-hidden="true"> / </span>
        {inst ? (
          <Link to="/statemachines/$type" params={{ type: inst.type }} search={namespaceSearch(namespace)}>
            {inst.type}
          </Link>
        ) : (
          <span>…</span>
        )}
        <span aria-hidden="true"> / </span>
        <span>{id}</span>
      </nav>
      <div className="page-header">
        <h1 id="instance-title" className="run-title">
          {id}
        </h1>
        {inst && <SmStatusBadge status={inst.status} />}
        {inst && (
          <span className="muted">
            in <span className="mono">{inst.state}</span>
          </span>
        )}
        <div className="spacer" />
        {inst && inst.status !== 'finished' && (
          <RefreshToggle
            live={live}
            onChange={setLive}
            every={refreshMs / 1000}
            updatedAt={q.dataUpdatedAt}
            fetching={q.isFetching}
          />
        )}
      </div>
      {q.error instanceof ApiError && q.error.status === 404 && !inst ? (
        <p className="empty">
          No instance <strong>{id}</strong> in namespace {namespace}.
        </p>
      ) : (
        <ErrorMessage error={q.error} title="Reading the instance failed" />
      )}
      {q.isPending && <p className="muted">Loading the instance…</p>}
      {inst && <Summary inst={inst} namespace={namespace} />}
      <ErrorMessage error={def.error} title="Reading the instance's definition failed" />
      {inst && definition && (
        <section className="card" aria-labelledby="graph-title">
          <div className="card-header">
            <h2 id="graph-title">State</h2>
            <span className="muted">
              {inst.type} version {definition.version}
            </span>
          </div>
          <Suspense fallback={<p className="muted">Loading the graph…</p>}>
            <StateMachineGraph
              definition={definition}
              current={inst.state}
              path={path}
              label={`The states of ${inst.type}; the instance went through ${path?.join(', ') ?? inst.state} and is in ${inst.state}.`}
            />
          </Suspense>
        </section>
      )}
      {inst && <Actions inst={inst} />}
      {inst && <Timeline inst={inst} definition={definition} now={q.dataUpdatedAt} />}
      {inst && <ManageForm inst={inst} namespace={namespace} definition={definition} />}
    </section>
  )
}

function Summary({ inst, namespace }: { inst: SmInstance; namespace: string }) {
  const vars = Object.entries(inst.vars ?? {}).sort(([a], [b]) => a.localeCompare(b))
  return (
    <section className="card" aria-labelledby="summary-title">
      <h2 id="summary-title">Summary</h2>
      <dl className="facts sm-summary">
        <Fact term="Status">
          <SmStatusBadge status={inst.status} />
        </Fact>
        <Fact term="State">
          <span className="mono">{inst.state}</span>
        </Fact>
        <Fact term="State text">{inst.state_text || <span className="muted">—</span>}</Fact>
        <Fact term="Next activation">
          <Time value={inst.next_activation} age />
        </Fact>
        <Fact term="Retries">{inst.retries}</Fact>
        <Fact term="Type">
          <Link
            to="/statemachines/$type"
            params={{ type: inst.type }}
            search={namespaceSearch(namespace)}
            className="inline-link"
          >
            {inst.type}
          </Link>{' '}
          version {inst.version}
        </Fact>
        <Fact term="Business key">{inst.business_key || <span className="muted">—</span>}</Fact>
        <Fact term="External ID">{inst.external_id || <span className="muted">—</span>}</Fact>
        <Fact term="Signal">{inst.signal ?? <span className="muted">none</span>}</Fact>
        <Fact term="Executor group">
          <span className="mono">{inst.executor_group || 'default'}</span>
          {inst.priority ? <span className="muted"> (priority {inst.priority})</span> : null}
        </Fact>
        <Fact term="Created">
          <Time value={inst.created} millis />
        </Fact>
        <Fact term="Modified">
          <Time value={inst.modified} millis />
        </Fact>
        <Fact term="Parent">
          {inst.parent ? (
            <Link
              to="/statemachine-instances/$namespace/$id"
              params={{ namespace, id: inst.parent }}
              className="inline-link"
            >
              {inst.parent}
            </Link>
          ) : (
            <span className="muted">—</span>
          )}
        </Fact>
        <Fact term="Children">
          {inst.children?.length ? (
            inst.children.map((c) => (
              <div key={c}>
                <Link to="/statemachine-instances/$namespace/$id" params={{ namespace, id: c }} className="inline-link">
                  {c}
                </Link>
              </div>
            ))
          ) : (
            <span className="muted">none</span>
          )}
        </Fact>
      </dl>
      <h3>Variables</h3>
      {vars.length === 0 ? (
        <p className="muted small">No variables.</p>
      ) : (
        <dl className="params sm-vars">
          {vars.map(([k, v]) => (
            <div key={k} data-var={k}>
              <dt>{k}</dt>
              <dd>{v === '' ? <span className="muted">empty</span> : v}</dd>
            </div>
          ))}
        </dl>
      )}
    </section>
  )
}

const actionLabels: Record<SmAction['type'], string> = {
  stateExecution: 'State execution',
  stateExecutionFailed: 'Failed execution',
  externalChange: 'External change',
  recovery: 'Recovery',
}

/** The actions as a table; choosing one shows the variables after it, what it changed marked. */
function Actions({ inst }: { inst: SmInstance }) {
  const actions = inst.actions ?? []
  const after = useMemo(() => varsAfterActions(inst), [inst])
  const [chosen, setChosen] = useState<number | null>(null)
  const index = chosen === null ? actions.length - 1 : actions.findIndex((a) => a.id === chosen)
  const action = actions[index]
  const vars = index >= 0 ? (after[index] ?? {}) : (inst.created_vars ?? {})
  const before = index > 0 ? (after[index - 1] ?? {}) : (inst.created_vars ?? {})
  const changed = new Set(Object.keys(action?.updated ?? {}))
  return (
    <section className="card" aria-labelledby="actions-title">
      <div className="card-header">
        <h2 id="actions-title">Actions</h2>
        <span className="muted">
          {actions.length} action{actions.length === 1 ? '' : 's'}
        </span>
      </div>
      {actions.length === 0 ? (
        <p className="muted">No actions yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="table compact sm-actions-table">
            <thead>
              <tr>
                <th scope="col" className="num">
                  ID
                </th>
                <th scope="col">Type</th>
                <th scope="col">State</th>
                <th scope="col" className="num">
                  Retry
                </th>
                <th scope="col">Started</th>
                <th scope="col" className="num">
                  Duration
                </th>
                <th scope="col">Executor</th>
                <th scope="col">Text</th>
                <th scope="col">Variables set</th>
              </tr>
            </thead>
            <tbody>
              {actions.map((a, i) => {
                const start = parseTime(a.execution_start)
                const end = parseTime(a.execution_end)
                const set = Object.entries(a.updated ?? {}).sort(([x], [y]) => x.localeCompare(y))
                return (
                  <tr
                    key={a.id}
                    data-action={a.id}
                    data-type={a.type}
                    data-state={a.state}
                    className={i === index ? 'selected' : undefined}
                  >
                    <td className="num">
                      <button
                        type="button"
                        className="small"
                        aria-pressed={i === index}
                        aria-label={`Variables after action ${a.id}`}
                        onClick={() => setChosen(a.id)}
                      >
                        {a.id}
                      </button>
                    </td>
                    <td>{actionLabels[a.type] ?? a.type}</td>
                    <td className="mono">{a.state}</td>
                    <td className="num">{a.retry_no}</td>
                    <td>
                      <Time value={a.execution_start} millis />
                    </td>
                    <td className="num">{start && end ? formatDuration(end.getTime() - start.getTime()) : '—'}</td>
                    <td>{a.executor || <span className="muted">—</span>}</td>
                    <td>{a.text || <span className="muted">—</span>}</td>
                    <td className="mono small">
                      {set.length ? set.map(([k, v]) => `${k}=${v}`).join(', ') : <span className="muted">—</span>}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
      {action && (
        <section className="sm-vars-after" aria-labelledby="vars-after-title">
          <h3 id="vars-after-title">Variables after action {action.id}</h3>
          {Object.keys(vars).length === 0 ? (
            <p className="muted small">No variables.</p>
          ) : (
            <dl className="params sm-vars-after-list">
              {Object.entries(vars)
                .sort(([a], [b]) => a.localeCompare(b))
                .map(([k, v]) => (
                  <div
                    key={k}
                    data-var={k}
                    data-changed={changed.has(k) || undefined}
                    className={changed.has(k) ? 'vars-changed' : undefined}
                  >
                    <dt>{k}</dt>
                    <dd>
                      {v}
                      {changed.has(k) && (
                        <span className="tag tag-warn">{k in before ? `changed from ${before[k]}` : 'new'}</span>
                      )}
                    </dd>
                  </div>
                ))}
            </dl>
          )}
        </section>
      )}
    </section>
  )
}

const barOf: Record<SmAction['type'], BarStatus> = {
  stateExecution: 'completed',
  stateExecutionFailed: 'failed',
  externalChange: 'timer',
  recovery: 'timed_out',
}

/**
 * The actions' timeline: a row per action, a bar from its start to its
 * end; and a row per wait in a manual state, from the action that moved
 * the instance there to the one that moved it on (or to now).
 */
function Timeline({ inst, definition, now }: { inst: SmInstance; definition: SmDefinition | undefined; now: number }) {
  const gantt: Gantt = useMemo(() => {
    const actions = (inst.actions ?? []).filter((a) => parseTime(a.execution_start))
    const rows: Gantt['rows'] = []
    const bars: Gantt['bars'] = []
    const waits = manualWaits(inst, actions, definition)
    actions.forEach((a, i) => {
      const start = parseTime(a.execution_start)?.getTime() ?? now
      const end = parseTime(a.execution_end)?.getTime()
      bars.push({
        row: rows.push({ seq: rows.length, kind: 'step', label: `${a.id} ${a.state}` }) - 1,
        start,
        // An external change takes no time: drawn as a sliver.
        end: Math.max(end ?? now, start + 1),
        status: barOf[a.type] ?? 'completed',
        label: actionLabels[a.type] ?? a.type,
        open: end === undefined,
        ...(a.type === 'stateExecutionFailed' && a.text ? { detail: a.text } : {}),
      })
      const wait = waits.get(i)
      if (wait && end !== undefined) {
        const until = i + 1 < actions.length ? parseTime(actions[i + 1]!.execution_start)?.getTime() : undefined
        bars.push({
          row: rows.push({ seq: rows.length, kind: 'step', label: `waited in ${wait}` }) - 1,
          start: end,
          end: Math.max(until ?? now, end + 1),
          status: 'scheduled',
          label: `waited in manual state ${wait}`,
          open: until === undefined,
        })
      }
    })
    return { rows, bars }
  }, [inst, definition, now])
  if (gantt.rows.length === 0) return null
  return (
    <section className="card" aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      <Suspense fallback={<p className="muted">Loading the chart…</p>}>
        <GanttChart
          gantt={gantt}
          label={`Timeline of the ${inst.actions?.length ?? 0} actions: when each started and ended${waitText(gantt)}. The actions table above lists the same times.`}
        />
      </Suspense>
    </section>
  )
}

/** ", and the waits in manual states (acceptCreditApplication)": what the timeline draws of them. */
function waitText(gantt: Gantt): string {
  const waits = gantt.bars.filter((b) => b.status === 'scheduled').map((b) => gantt.rows[b.row]?.label ?? '')
  return waits.length ? `, and the ${waits.length === 1 ? 'wait' : 'waits'} in manual states (${waits.join('; ')})` : ''
}

/**
 * The manual state the instance waited in after each action, by the
 * action's index: the state of the path (smPath) the action led to, when
 * that is a manual state. An instance still in one waits to now.
 */
function manualWaits(inst: SmInstance, actions: SmAction[], def: SmDefinition | undefined): Map<number, string> {
  const out = new Map<number, string>()
  if (!def) return out
  const manual = new Set((def.states ?? []).filter((s) => s.kind === 'manual').map((s) => s.name))
  actions.forEach((a, i) => {
    const next = actions[i + 1]
    // The path from this action's state to the next action's (or to where it is now).
    const stretch = smPath(def, [a.state], next ? next.state : inst.state)
    // Past the action's own state: an external change's state is where it moved to.
    const after = stretch.length > 1 ? stretch[1]! : a.type === 'externalChange' ? a.state : undefined
    if (after && manual.has(after) && (next || inst.state === after)) out.set(i, after)
  })
  return out
}
