import { getRouteApi, Link, useNavigate } from '@tanstack/react-router'
import { lazy, Suspense, useCallback, useMemo, useState } from 'react'
import { ApiError } from '../../api/client'
import type { DagInstanceRef, DagTask, DagTaskInstance } from '../../api/dags'
import { useAccess } from '../../components/access'
import { DagStateBadge } from '../../components/DagStateBadge'
import { dagLegend, dagStateLive } from '../../components/dagStates'
import { ErrorMessage } from '../../components/ErrorMessage'
import { RefreshToggle } from '../../components/RefreshToggle'
import { StatusBadge } from '../../components/StatusBadge'
import { Time } from '../../components/Time'
import { formatDuration, parseTime } from '../../components/timeFormat'
import { ParamsList } from '../dag/Definition'
import { refreshMs } from '../dags/queries'
import { namespaceSearch } from '../dags/search'
import { InstanceActions } from './InstanceActions'
import { InstanceTimeline } from './InstanceTimeline'
import { useInstance, useInstanceDefinition } from './queries'
import { TaskPanel } from './TaskPanel'
import { TaskStates } from './TaskStates'
import { WaitingForWorker } from './WaitingForWorker'
import { Fact } from '../../components/Fact'

// React Flow and dagre load with the first graph, not with the console.
const DagGraph = lazy(() => import('../../components/DagGraph'))

const route = getRouteApi('/dag-instances/$namespace/$workflowId')

/**
 * A DAG instance: its state and parameters, the graph with each task's
 * state (refreshed while it runs), a task's details and log in a side
 * panel, the tasks' timeline, and the commands its state allows.
 */
export function InstancePage() {
  const { namespace, workflowId } = route.useParams()
  // Pausing, resuming, stopping and rerunning an instance are an operator's.
  const mayCommand = useAccess().can(namespace, 'operator')
  const { task: selected } = route.useSearch()
  const navigate = useNavigate()
  const ref: DagInstanceRef = useMemo(() => ({ namespace, workflowId }), [namespace, workflowId])
  const [live, setLive] = useState(true)
  const q = useInstance(ref, live)
  const run = q.data?.run
  const inst = q.data?.instance ?? undefined
  const def = useInstanceDefinition(inst)
  const states = useMemo(() => new Map((inst?.tasks ?? []).map((t) => [t.name, t])), [inst?.tasks])
  // The definition's tasks; until it is parsed (or if it cannot be), the instance's, unconnected.
  const tasks: DagTask[] = useMemo(
    () => def.data?.tasks ?? (inst?.tasks ?? []).map((t) => ({ name: t.name, type: t.type })),
    [def.data, inst?.tasks],
  )
  const select = useCallback(
    (task: string | undefined) =>
      void navigate({
        to: '/dag-instances/$namespace/$workflowId',
        params: { namespace, workflowId },
        search: task ? { task } : {},
        replace: true,
      }),
    [navigate, namespace, workflowId],
  )
  const onSelect = useCallback((task: string) => select(task === selected ? undefined : task), [select, selected])
  const running = run?.status === 'running' || dagStateLive(inst?.state)
  const start = parseTime(inst?.start_time)
  const end = parseTime(inst?.end_time)?.getTime() ?? parseTime(run?.close_time)?.getTime()
  const panelTask = selected ? tasks.find((t) => t.name === selected) : undefined

  return (
    <section className="page" aria-labelledby="instance-title">
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/dags" search={namespaceSearch(namespace)}>
          DAGs
        </Link>
        <span aria-hidden="true"> / </span>
        {inst ? (
          <Link to="/dags/$name" params={{ name: inst.dag }} search={namespaceSearch(namespace)}>
            {inst.dag}
          </Link>
        ) : (
          <span>…</span>
        )}
        <span aria-hidden="true"> / </span>
        <span>{workflowId}</span>
      </nav>
      <div className="page-header">
        <h1 id="instance-title" className="run-title">
          {workflowId}
        </h1>
        {inst && <DagStateBadge state={inst.state} />}
        <div className="spacer" />
        {running && (
          <RefreshToggle
            live={live}
            onChange={setLive}
            every={refreshMs / 1000}
            updatedAt={q.dataUpdatedAt}
            fetching={q.isFetching}
          />
        )}
        {q.data && mayCommand && <InstanceActions instanceRef={ref} description={q.data} />}
      </div>
      {q.error instanceof ApiError && q.error.status === 404 && !q.data ? (
        <p className="empty">
          No instance <strong>{workflowId}</strong> in namespace {namespace}: it may have been removed after its
          retention.
        </p>
      ) : (
        <ErrorMessage error={q.error} title="Reading the instance failed" />
      )}
      {q.isPending && <p className="muted">Loading the instance…</p>}
      {q.data && !inst && (
        <p className="notice">
          The instance has not answered yet: its run waits for a worker (strand worker) to take its first task.
        </p>
      )}
      {run && inst && (
        <section className="card" aria-labelledby="summary-title">
          <h2 id="summary-title">Summary</h2>
          <dl className="facts">
            <Fact term="State">
              <DagStateBadge state={inst.state} />
            </Fact>
            <Fact term="DAG">
              <Link
                to="/dags/$name"
                params={{ name: inst.dag }}
                search={namespaceSearch(namespace)}
                className="inline-link"
              >
                {inst.dag}
              </Link>{' '}
              version {inst.version}
            </Fact>
            <Fact term="Run">
              <StatusBadge status={run.status} />{' '}
              <Link
                to="/namespaces/$namespace/runs/$workflowId/$runId"
                params={{ namespace, workflowId, runId: run.run_id }}
                className="mono small inline-link"
                aria-label={`Run ${run.run_id}`}
              >
                {run.run_id.slice(0, 13)}…
              </Link>
            </Fact>
            <Fact term="Business time">
              <Time value={inst.schedule_time} />
            </Fact>
            <Fact term="Started">
              <Time value={inst.start_time} millis />
            </Fact>
            <Fact term="Ended">
              <Time value={inst.end_time} millis />
            </Fact>
            <Fact term="Duration">
              {start ? formatDuration((end ?? q.dataUpdatedAt) - start.getTime()) + (end ? '' : ' so far') : '—'}
            </Fact>
            <Fact term="Failure strategy">{inst.failure_strategy || 'end'}</Fact>
          </dl>
          {inst.error && (
            <div className="error instance-error">
              <strong>Error: </strong>
              <span className="failure-message">{inst.error}</span>
            </div>
          )}
          <h3>Parameters</h3>
          <ParamsList
            params={Object.entries(inst.params ?? {}).sort(([a], [b]) => a.localeCompare(b))}
            empty="No parameters."
          />
        </section>
      )}
      {inst && run?.status === 'running' && <WaitingForWorker namespace={namespace} tasks={inst.tasks} live={live} />}
      {inst && (
        <section className="card" aria-labelledby="graph-title">
          <div className="card-header">
            <h2 id="graph-title">Tasks</h2>
            <ul className="legend" aria-label="Legend">
              {dagLegend.map((l) => (
                <li key={l.tone} className={`legend-dag-${l.tone}`}>
                  {l.label}
                </li>
              ))}
            </ul>
          </div>
          <ErrorMessage error={def.error} title="Reading the graph failed" />
          <div className={panelTask ? 'dag-split open' : 'dag-split'}>
            <div className="dag-split-graph">
              <Suspense fallback={<p className="muted">Loading the graph…</p>}>
                <DagGraph
                  tasks={tasks}
                  states={states}
                  selected={selected}
                  onSelect={onSelect}
                  label={`The graph of ${inst.dag} with the state of each of its ${tasks.length} tasks; choose a task for its details and log. The table below lists them.`}
                />
              </Suspense>
            </div>
            {panelTask && (
              <TaskPanel
                key={panelTask.name}
                instanceRef={ref}
                task={panelTask}
                instance={states.get(panelTask.name) as DagTaskInstance | undefined}
                params={inst.params}
                live={live}
                onClose={() => select(undefined)}
              />
            )}
          </div>
          <TaskStates tasks={tasks} states={states} onSelect={onSelect} selected={selected} />
        </section>
      )}
      {inst && <InstanceTimeline tasks={inst.tasks} now={end ?? q.dataUpdatedAt} />}
    </section>
  )
}
