import { getRouteApi, Link } from '@tanstack/react-router'
import { useState } from 'react'
import type { DagSummary } from '../../api/dags'
import { defaultNamespace } from '../../api/namespaces'
import { useAccess } from '../../components/access'
import { ErrorMessage } from '../../components/ErrorMessage'
import { OnlineSwitch } from './OnlineSwitch'
import { useDags } from './queries'
import { RunDialog } from './RunDialog'
import { namespaceSearch } from './search'

const route = getRouteApi('/dags')

/** The DAGs: each with its current version, its versions, its release, and Run. */
export function DagsPage() {
  const namespace = route.useSearch().namespace ?? defaultNamespace
  const dags = useDags()
  // Definitions are every namespace's: changing one is an operator's of
  // some namespace. Running one is a writer's of the namespace it runs in.
  const access = useAccess()
  const mayChange = access.canSomewhere('operator')
  const [running, setRunning] = useState<string | null>(null)
  const list = dags.data ?? []
  return (
    <section className="page" aria-labelledby="dags-title">
      <div className="page-header">
        <h1 id="dags-title">DAGs</h1>
        <span className="muted">instances run in namespace {namespace}</span>
        <div className="spacer" />
        {mayChange && (
          <Link to="/dags/new" search={namespaceSearch(namespace)} className="button primary">
            New DAG…
          </Link>
        )}
      </div>
      <ErrorMessage error={dags.error} title="Listing the DAGs failed" />
      {dags.isPending && <p className="muted">Loading DAGs…</p>}
      {dags.data &&
        (list.length > 0 ? (
          <DagsTable
            dags={list}
            namespace={namespace}
            onRun={setRunning}
            mayRun={access.can(namespace, 'writer')}
            mayChange={mayChange}
          />
        ) : (
          <div className="empty">
            <p className="strong">No DAGs yet.</p>
            <p>
              A DAG is a pipeline of tasks (shell scripts, HTTP calls, SQL) that run after the tasks they depend on.
              Create one, or apply a file with <code>strand dag apply -f FILE</code>.
            </p>
          </div>
        ))}
      {running && <RunDialog name={running} namespace={namespace} onClose={() => setRunning(null)} />}
    </section>
  )
}

function DagsTable(props: {
  dags: DagSummary[]
  namespace: string
  onRun: (name: string) => void
  mayRun: boolean
  mayChange: boolean
}) {
  const { dags, namespace, onRun, mayRun, mayChange } = props
  return (
    <div className="table-wrap">
      <table className="table dags-table">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col" className="num">
              Current version
            </th>
            <th scope="col" className="num">
              Versions
            </th>
            <th scope="col">Release</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {dags.map((d) => (
            <tr key={d.name} data-dag={d.name}>
              <td>
                <Link to="/dags/$name" params={{ name: d.name }} search={namespaceSearch(namespace)} className="strong">
                  {d.name}
                </Link>
              </td>
              <td className="num">{d.current}</td>
              <td className="num">{d.versions}</td>
              <td>
                <OnlineSwitch name={d.name} online={d.online} readOnly={!mayChange} />
              </td>
              <td>
                <div className="actions">
                  {mayRun && (
                    <button
                      type="button"
                      onClick={() => onRun(d.name)}
                      disabled={!d.online}
                      aria-label={`Run ${d.name}`}
                      title={d.online ? undefined : 'Offline: put it online to run it'}
                    >
                      Run…
                    </button>
                  )}
                  {mayChange && (
                    <Link
                      to="/dags/$name/edit"
                      params={{ name: d.name }}
                      search={namespaceSearch(namespace)}
                      className="button"
                      aria-label={`Edit ${d.name}`}
                    >
                      Edit
                    </Link>
                  )}
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
