import { getRouteApi, Link } from '@tanstack/react-router'
import { lazy, Suspense, useState } from 'react'
import type { SmDefinition } from '../../api/statemachines'
import { defaultNamespace } from '../../api/namespaces'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Fact } from '../../components/Fact'
import { RefreshToggle } from '../../components/RefreshToggle'
import { smKindLabel, smKinds } from '../../components/smKinds'
import { Time } from '../../components/Time'
import { formatNanos } from '../../components/timeFormat'
import { namespaceSearch } from '../dags/search'
import { refreshMs, useSmStats, useStateMachine, type SmStateStats } from '../statemachines/queries'
import { CreateForm } from './CreateForm'
import { Instances } from './Instances'

// React Flow and dagre load with the first graph, not with the console.
const StateMachineGraph = lazy(() => import('../../components/ReadableSmGraph'))

const route = getRouteApi('/statemachines/$type')

/** A state machine: its graph with the instances in each state, its states, its instances, and a form to create one. */
export function StateMachinePage() {
  const { type } = route.useParams()
  const namespace = route.useSearch().namespace ?? defaultNamespace
  // Creating an instance is a writer's of the namespace.
  const mayCreate = useAccess().can(namespace, 'writer')
  const def = useStateMachine(type)
  const [live, setLive] = useState(true)
  const stats = useSmStats(namespace, type, live && !!def.data)
  const d = def.data
  return (
    <section className="page" aria-labelledby="sm-title">
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/statemachines" search={namespaceSearch(namespace)}>
          State machines
        </Link>
        <span aria-hidden="true"> / </span>
        <span>{type}</span>
      </nav>
      <div className="page-header">
        <h1 id="sm-title" className="run-title">
          {type}
        </h1>
        {d && <span className="muted">version {d.version}</span>}
      </div>
      <ErrorMessage error={def.error} title="Reading the state machine failed" />
      {def.isPending && <p className="muted">Loading the state machine…</p>}
      {def.data === undefined && def.isSuccess && (
        <p className="empty">
          No state machine <strong>{type}</strong>: a worker stores its definition when it registers it.
        </p>
      )}
      {d && (
        <section className="card" aria-labelledby="graph-title">
          <div className="card-header">
            <h2 id="graph-title">Graph</h2>
            <span className="muted">instances per state in namespace {namespace}</span>
            <ul className="legend" aria-label="Legend">
              {smKinds.map((k) => (
                <li key={k} className={`legend-sm-${k}`}>
                  {smKindLabel(k)}
                </li>
              ))}
              <li className="legend-sm-failure">Failure</li>
            </ul>
            <RefreshToggle
              live={live}
              onChange={setLive}
              every={refreshMs / 1000}
              updatedAt={stats.dataUpdatedAt}
              fetching={stats.isFetching}
            />
          </div>
          <ErrorMessage error={stats.error} title="Counting the instances failed" />
          <Suspense fallback={<p className="muted">Loading the graph…</p>}>
            <StateMachineGraph
              definition={d}
              counts={stats.data}
              label={`The states of ${type} and the moves between them, with the instances in each state; the table below lists them.`}
            />
          </Suspense>
        </section>
      )}
      {d && <States definition={d} counts={stats.data} />}
      {d && mayCreate && <CreateForm definition={d} namespace={namespace} />}
      {d && <Instances definition={d} namespace={namespace} />}
    </section>
  )
}

/** The states as a table: kind, moves, failure state, retries, instances. */
function States({
  definition: d,
  counts,
}: {
  definition: SmDefinition
  counts: Map<string, SmStateStats> | undefined
}) {
  return (
    <section className="card" aria-labelledby="states-title">
      <div className="card-header">
        <h2 id="states-title">States</h2>
        <span className="muted">{d.description}</span>
      </div>
      <dl className="facts compact">
        <Fact term="Version">{d.version}</Fact>
        <Fact term="Error state">{d.error_state || <span className="muted">none</span>}</Fact>
        <Fact term="Default retries">{d.retries}</Fact>
        <Fact term="Stored">
          <Time value={d.modified} />
        </Fact>
        <Fact term="SHA-1">
          <span className="mono">{d.sha1.slice(0, 12)}</span>
        </Fact>
      </dl>
      <div className="table-wrap">
        <table className="table compact sm-states">
          <thead>
            <tr>
              <th scope="col">State</th>
              <th scope="col">Kind</th>
              <th scope="col">Description</th>
              <th scope="col">Moves to</th>
              <th scope="col">Failures go to</th>
              <th scope="col" className="num">
                Retries
              </th>
              <th scope="col" className="num">
                Queued
              </th>
              <th scope="col" className="num">
                Instances
              </th>
            </tr>
          </thead>
          <tbody>
            {(d.states ?? []).map((s) => {
              const works = ['start', 'normal', 'wait'].includes(s.kind)
              return (
                <tr key={s.name} data-state={s.name}>
                  <td className="mono">{s.name}</td>
                  <td>{smKindLabel(s.kind)}</td>
                  <td>{s.description || <span className="muted">—</span>}</td>
                  <td className="mono">
                    {(d.transitions?.[s.name] ?? []).join(', ') || <span className="muted">—</span>}
                  </td>
                  <td className="mono">
                    {(works && (s.failure || d.error_state)) || <span className="muted">—</span>}
                  </td>
                  <td className="num">
                    {works ? (s.retries ?? d.retries) : <span className="muted">—</span>}
                    {works && s.backoff ? (
                      <span className="muted small"> (back-off {formatNanos(s.backoff)})</span>
                    ) : null}
                  </td>
                  <td className="num" title="their next activation has come: they run as soon as a worker takes them">
                    {!works ? <span className="muted">—</span> : counts ? (counts.get(s.name)?.queued ?? 0) : '…'}
                  </td>
                  <td className="num">{counts ? (counts.get(s.name)?.count ?? 0) : '…'}</td>
                </tr>
              )
            })}
          </tbody>
        </table>
      </div>
    </section>
  )
}
