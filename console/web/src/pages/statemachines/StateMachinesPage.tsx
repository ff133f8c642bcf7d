import { getRouteApi, Link } from '@tanstack/react-router'
import { defaultNamespace } from '../../api/namespaces'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Time } from '../../components/Time'
import { namespaceSearch } from '../dags/search'
import { useStateMachines } from './queries'

const route = getRouteApi('/statemachines')

/** The state machine definitions: type, description, version, states. */
export function StateMachinesPage() {
  const namespace = route.useSearch().namespace ?? defaultNamespace
  const defs = useStateMachines()
  const list = defs.data ?? []
  return (
    <section className="page" aria-labelledby="sm-title">
      <div className="page-header">
        <h1 id="sm-title">State machines</h1>
        <span className="muted">instances in namespace {namespace}</span>
      </div>
      <ErrorMessage error={defs.error} title="Listing the state machines failed" />
      {defs.isPending && <p className="muted">Loading state machines…</p>}
      {defs.data &&
        (list.length === 0 ? (
          <div className="empty">
            <p className="strong">No state machines yet.</p>
            <p>
              A state machine is defined in Go (package statemachine); a worker stores its definition when it registers
              it.
            </p>
          </div>
        ) : (
          <div className="table-wrap">
            <table className="table sm-table">
              <thead>
                <tr>
                  <th scope="col">Type</th>
                  <th scope="col">Description</th>
                  <th scope="col" className="num">
                    Version
                  </th>
                  <th scope="col" className="num">
                    States
                  </th>
                  <th scope="col">Stored</th>
                </tr>
              </thead>
              <tbody>
                {list.map((d) => (
                  <tr key={d.type} data-type={d.type}>
                    <td>
                      <Link
                        to="/statemachines/$type"
                        params={{ type: d.type }}
                        search={namespaceSearch(namespace)}
                        className="strong"
                      >
                        {d.type}
                      </Link>
                    </td>
                    <td>
                      {d.description || <span className="muted">—</span>}
                      {d.error && <div className="error small">{d.error}</div>}
                    </td>
                    <td className="num">{d.version}</td>
                    <td className="num">{d.states?.length ?? 0}</td>
                    <td>
                      <Time value={d.modified} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ))}
    </section>
  )
}
