import { useState } from 'react'
import { storedText, type DagRelease, type StoredDefinition } from '../../api/dags'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { ErrorMessage } from '../../components/ErrorMessage'
import { Time } from '../../components/Time'
import { useDagVersions, useRelease } from '../dags/queries'

/**
 * A DAG's versions, newest first: the current one marked; view a version's
 * text, make one current (mayChange: an operator of some namespace).
 */
export function Versions({ name, release, mayChange }: { name: string; release: DagRelease; mayChange: boolean }) {
  const versions = useDagVersions(name)
  const setCurrent = useRelease(name)
  const [viewing, setViewing] = useState<StoredDefinition | null>(null)
  const list = [...(versions.data ?? [])].reverse()
  return (
    <section className="card" aria-labelledby="versions-title">
      <div className="card-header">
        <h2 id="versions-title">Versions</h2>
        <span className="muted">{versions.data && `${list.length} stored`}</span>
      </div>
      <ErrorMessage error={versions.error} title="Listing the versions failed" />
      <ErrorMessage error={setCurrent.error} title="Changing the current version failed" />
      {versions.isPending && <p className="muted">Loading versions…</p>}
      {versions.data && (
        <div className="table-wrap">
          <table className="table compact versions-table">
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Stored</th>
                <th scope="col">By</th>
                <th scope="col">SHA-1</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((v) => {
                const current = v.version === release.current
                return (
                  <tr key={v.version} data-version={v.version} aria-current={current ? 'true' : undefined}>
                    <td>
                      <span className="strong">{v.version}</span>
                      {current && <span className="tag tag-here">current</span>}
                    </td>
                    <td>
                      <Time value={v.created_at} />
                    </td>
                    <td>{v.modified_by || <span className="muted">—</span>}</td>
                    <td className="mono">{v.sha1?.slice(0, 12)}</td>
                    <td>
                      <div className="actions">
                        <button
                          type="button"
                          className="small"
                          onClick={() => setViewing(v)}
                          aria-label={`View version ${v.version}`}
                        >
                          View text
                        </button>
                        {mayChange && (
                          <button
                            type="button"
                            className="small"
                            disabled={current || setCurrent.isPending}
                            onClick={() => setCurrent.mutate({ current: v.version })}
                            aria-label={`Make version ${v.version} current`}
                          >
                            Make current
                          </button>
                        )}
                      </div>
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
      {viewing && (
        <ConfirmDialog
          title={`${name} version ${viewing.version}`}
          description={viewing.version === release.current ? 'The current version.' : undefined}
          confirmLabel="Make current"
          wide
          disabled={viewing.version === release.current || !mayChange}
          pending={setCurrent.isPending}
          error={setCurrent.error}
          onConfirm={() => setCurrent.mutate({ current: viewing.version }, { onSuccess: () => setViewing(null) })}
          onClose={() => setViewing(null)}
        >
          <pre className="json version-text" tabIndex={0} aria-label={`Text of version ${viewing.version}`}>
            {storedText(viewing)}
          </pre>
        </ConfirmDialog>
      )}
    </section>
  )
}
