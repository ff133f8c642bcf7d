import { useQuery } from '@tanstack/react-query'
import { listDataSources, listResources, type DataSource, type Resource } from '../../api/resources'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Time } from '../../components/Time'

/** The resources (files DAG tasks fetch) and data sources the caller may use. */
export function ResourcesPage() {
  const resources = useQuery({ queryKey: ['resources'], queryFn: ({ signal }) => listResources(signal) })
  const sources = useQuery({ queryKey: ['datasources'], queryFn: ({ signal }) => listDataSources(signal) })
  return (
    <section className="page" aria-labelledby="resources-title">
      <div className="page-header">
        <h1 id="resources-title">Resources</h1>
        <span className="muted">what DAG tasks name: files and data sources</span>
      </div>
      <section className="card" aria-labelledby="files-title">
        <h2 id="files-title">Files</h2>
        <ErrorMessage error={resources.error} title="Listing the resources failed" />
        {resources.isPending && <p className="muted">Loading resources…</p>}
        {resources.data &&
          (resources.data.resources.length > 0 ? (
            <ResourcesTable resources={resources.data.resources} />
          ) : (
            <p className="muted">
              No resources yet: <code>strand resource upload NAME FILE</code> stores one.
            </p>
          ))}
        {resources.data && <p className="muted">At most {formatSize(resources.data.max_size)} per version.</p>}
      </section>
      <section className="card" aria-labelledby="sources-title">
        <h2 id="sources-title">Data sources</h2>
        <ErrorMessage error={sources.error} title="Listing the data sources failed" />
        {sources.isPending && <p className="muted">Loading data sources…</p>}
        {sources.data &&
          (sources.data.datasources.length > 0 ? (
            <DataSourcesTable sources={sources.data.datasources} />
          ) : (
            <p className="muted">
              No data sources yet: <code>strand datasource create NAME --type postgresql --url URL</code> defines one.
            </p>
          ))}
      </section>
    </section>
  )
}

function ResourcesTable({ resources }: { resources: Resource[] }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col" className="num">
              Latest version
            </th>
            <th scope="col" className="num">
              Size
            </th>
            <th scope="col">Uploaded</th>
            <th scope="col">Owner</th>
            <th scope="col">Granted to</th>
          </tr>
        </thead>
        <tbody>
          {resources.map((r) => {
            const latest = r.versions[r.versions.length - 1]
            if (!latest) return null
            return (
              <tr key={r.name}>
                <td>
                  <code>{r.name}</code>
                </td>
                <td className="num">{latest.version}</td>
                <td className="num">{formatSize(latest.size)}</td>
                <td>
                  <Time value={latest.uploaded_at} />
                </td>
                <td>{r.owner}</td>
                <td>{r.users?.join(', ') || <span className="muted">no one else</span>}</td>
              </tr>
            )
          })}
        </tbody>
      </table>
    </div>
  )
}

function DataSourcesTable({ sources }: { sources: DataSource[] }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
            <th scope="col">Connection</th>
            <th scope="col">Password</th>
            <th scope="col">Owner</th>
            <th scope="col">Granted to</th>
          </tr>
        </thead>
        <tbody>
          {sources.map((d) => (
            <tr key={d.name}>
              <td>
                <code>{d.name}</code>
              </td>
              <td>{d.type}</td>
              <td>
                <code>{d.url}</code>
              </td>
              <td>{d.has_password ? 'kept encrypted' : <span className="muted">none</span>}</td>
              <td>{d.owner}</td>
              <td>{d.users?.join(', ') || <span className="muted">no one else</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

/** A size in bytes as people read it. */
function formatSize(n: number): string {
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(n % (1 << 20) === 0 ? 0 : 1)} MiB`
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(n % (1 << 10) === 0 ? 0 : 1)} KiB`
  return n === 1 ? '1 byte' : `${n} bytes`
}
