import type { DagDefinition, DagTask } from '../../api/dags'
import { Fact } from '../../components/Fact'

/** What a definition says besides its tasks: description, failure strategy, parameters. */
export function DefinitionFacts({ definition: d }: { definition: DagDefinition }) {
  const params = Object.entries(d.params ?? {}).sort(([a], [b]) => a.localeCompare(b))
  return (
    <section className="card" aria-labelledby="definition-title">
      <h2 id="definition-title">Definition</h2>
      <dl className="facts">
        <Fact term="Description">{d.description || <span className="muted">—</span>}</Fact>
        <Fact term="Failure strategy">{d.failure_strategy || 'end'}</Fact>
        <Fact term="Worker group">{d.worker_group || 'default'}</Fact>
        <Fact term="Timeout">{d.timeout || <span className="muted">none</span>}</Fact>
      </dl>
      <h3>Parameters</h3>
      <ParamsList params={params} empty="No global parameters." />
    </section>
  )
}

/** Parameters as name = value lines. */
export function ParamsList({ params, empty }: { params: [string, string][]; empty: string }) {
  if (params.length === 0) return <p className="muted small">{empty}</p>
  return (
    <dl className="params">
      {params.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v === '' ? <span className="muted">empty</span> : v}</dd>
        </div>
      ))}
    </dl>
  )
}

/** The tasks as a table: the graph's text alternative. */
export function TasksTable({ tasks }: { tasks: DagTask[] }) {
  return (
    <details className="bars-table">
      <summary>The tasks as a table</summary>
      <div className="table-wrap">
        <table className="table compact">
          <thead>
            <tr>
              <th scope="col">Task</th>
              <th scope="col">Type</th>
              <th scope="col">Upstream</th>
              <th scope="col">Retries</th>
              <th scope="col">Marks</th>
            </tr>
          </thead>
          <tbody>
            {tasks.map((t) => (
              <tr key={t.name}>
                <td className="mono">{t.name}</td>
                <td>{t.type}</td>
                <td className="mono">{(t.upstream ?? []).join(', ') || <span className="muted">—</span>}</td>
                <td className="num">{t.retries ?? 0}</td>
                <td>{t.forbidden ? 'forbidden' : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  )
}
