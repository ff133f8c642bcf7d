import { getRouteApi, Link } from '@tanstack/react-router'
import { lazy, Suspense, useState } from 'react'
import { ApiError } from '../../api/client'
import { defaultNamespace } from '../../api/namespaces'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { OnlineSwitch } from '../dags/OnlineSwitch'
import { useDag } from '../dags/queries'
import { RunDialog } from '../dags/RunDialog'
import { namespaceSearch } from '../dags/search'
import { DefinitionFacts, TasksTable } from './Definition'
import { Instances } from './Instances'
import { Versions } from './Versions'
import { GroupsWithoutWorker } from '../dag-instance/WaitingForWorker'
import { plural } from '../../components/plural'

// React Flow and dagre load with the first graph, not with the console.
const DagGraph = lazy(() => import('../../components/DagGraph'))

const route = getRouteApi('/dags/$name')

/** A DAG: the graph of its current version, its definition, versions and instances. */
export function DagPage() {
  const { name } = route.useParams()
  const namespace = route.useSearch().namespace ?? defaultNamespace
  const dag = useDag(name)
  const access = useAccess()
  const mayRun = access.can(namespace, 'writer')
  const mayChange = access.canSomewhere('operator')
  const [running, setRunning] = useState(false)
  const d = dag.data
  const def = d?.definition
  return (
    <section className="page" aria-labelledby="dag-title">
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/dags" search={namespaceSearch(namespace)}>
          DAGs
        </Link>
        <span aria-hidden="true"> / </span>
        <span>{name}</span>
      </nav>
      <div className="page-header">
        <h1 id="dag-title" className="run-title">
          {name}
        </h1>
        {d && <span className="muted">current version {d.release.current}</span>}
        {d && <OnlineSwitch name={name} online={d.release.online} readOnly={!mayChange} />}
        <div className="spacer" />
        {(mayRun || mayChange) && (
          <div className="actions">
            {mayRun && (
              <button type="button" className="primary" onClick={() => setRunning(true)} disabled={!d?.release.online}>
                Run…
              </button>
            )}
            {mayChange && (
              <Link to="/dags/$name/edit" params={{ name }} search={namespaceSearch(namespace)} className="button">
                Edit
              </Link>
            )}
          </div>
        )}
      </div>
      {dag.error instanceof ApiError && dag.error.status === 404 ? (
        <p className="empty">
          No DAG <strong>{name}</strong>: it may have been deleted.
        </p>
      ) : (
        <ErrorMessage error={dag.error} title="Reading the DAG failed" />
      )}
      {dag.isPending && <p className="muted">Loading the DAG…</p>}
      {def && <GroupsWithoutWorker namespace={namespace} definition={def} />}
      {d && (
        <section className="card" aria-labelledby="graph-title">
          <div className="card-header">
            <h2 id="graph-title">Graph</h2>
            <span className="muted">
              version {d.stored.version}
              {def && `, ${def.tasks.length} task${def.tasks.length === 1 ? '' : 's'}`}
            </span>
          </div>
          {def ? (
            <>
              <Suspense fallback={<p className="muted">Loading the graph…</p>}>
                <DagGraph
                  tasks={def.tasks}
                  label={`The graph of ${name}: ${plural(def.tasks.length, 'task')}; the table below lists them.`}
                />
              </Suspense>
              <TasksTable tasks={def.tasks} />
            </>
          ) : (
            <p className="muted">This version's text does not parse: see its text under Versions.</p>
          )}
        </section>
      )}
      {def && <DefinitionFacts definition={def} />}
      {d && <Versions name={name} release={d.release} mayChange={mayChange} />}
      {d && <Instances name={name} namespace={namespace} />}
      {running && <RunDialog name={name} namespace={namespace} onClose={() => setRunning(false)} />}
    </section>
  )
}
