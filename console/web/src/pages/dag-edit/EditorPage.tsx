import { getRouteApi, Link, useNavigate } from '@tanstack/react-router'
import { lazy, Suspense, useCallback, useId, useRef, useState } from 'react'
import { checkDag, storedText, type DagCheck, type DagTask } from '../../api/dags'
import { defaultNamespace } from '../../api/namespaces'
import { ErrorMessage } from '../../components/ErrorMessage'
import { useApply, useDag } from '../dags/queries'
import { namespaceSearch } from '../dags/search'
import { exampleDag } from './example'
import { problemText } from './problems'
import type { EditorHandle } from './YamlEditor'
import { plural } from '../../components/plural'

// CodeMirror, React Flow and dagre load with the editor, not with the console.
const YamlEditor = lazy(() => import('./YamlEditor'))
const DagGraph = lazy(() => import('../../components/DagGraph'))

const newRoute = getRouteApi('/dags/new')
const editRoute = getRouteApi('/dags/$name/edit')

/** /dags/new: the editor, on the example text. */
export function NewDagPage() {
  const namespace = newRoute.useSearch().namespace ?? defaultNamespace
  return <Editor title="New DAG" initial={exampleDag} namespace={namespace} />
}

/** /dags/$name/edit: the editor, on the DAG's current text. */
export function EditDagPage() {
  const { name } = editRoute.useParams()
  const namespace = editRoute.useSearch().namespace ?? defaultNamespace
  const dag = useDag(name)
  if (!dag.data) {
    return (
      <section className="page" aria-labelledby="editor-title">
        <h1 id="editor-title">Edit {name}</h1>
        <ErrorMessage error={dag.error} title="Reading the DAG failed" />
        {dag.isPending && <p className="muted">Loading the DAG…</p>}
      </section>
    )
  }
  return (
    <Editor
      key={dag.data.stored.version}
      title={`Edit ${name}`}
      name={name}
      version={dag.data.stored.version}
      initial={storedText(dag.data.stored)}
      namespace={namespace}
    />
  )
}

interface Checked {
  text: string
  result: DagCheck | Error
}

/**
 * The editor of a definition's text: the text is checked as it is typed
 * and each problem shown in place and listed below; Apply stores a valid
 * text as a new version and opens the DAG's page.
 */
function Editor(props: { title: string; name?: string; version?: number; initial: string; namespace: string }) {
  const { title, name, version, initial, namespace } = props
  const [text, setText] = useState(initial)
  const [checked, setChecked] = useState<Checked | null>(null)
  const handle = useRef<EditorHandle>(null)
  const apply = useApply()
  const navigate = useNavigate()
  const problemsId = useId()
  // The graph of the last valid text: it stays while the text is being changed.
  const [preview, setPreview] = useState<DagTask[] | undefined>(undefined)
  const onChecked = useCallback((t: string, result: DagCheck | Error) => {
    setChecked({ text: t, result })
    if (!(result instanceof Error) && result.valid && result.definition) setPreview(result.definition.tasks)
  }, [])
  const check = useCallback((t: string) => checkDag(t), [])

  const current = checked?.text === text ? checked.result : undefined
  const valid = current !== undefined && !(current instanceof Error) && current.valid
  const problems = current && !(current instanceof Error) ? (current.problems ?? []) : []
  const status =
    current === undefined
      ? 'Checking…'
      : current instanceof Error
        ? 'The check failed.'
        : current.valid
          ? `Valid: ${current.definition?.name}, ${plural(current.definition?.tasks.length ?? 0, 'task')}.`
          : `${problems.length} problem${problems.length === 1 ? '' : 's'}.`

  return (
    <section className="page" aria-labelledby="editor-title">
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/dags" search={namespaceSearch(namespace)}>
          DAGs
        </Link>
        <span aria-hidden="true"> / </span>
        {name ? (
          <>
            <Link to="/dags/$name" params={{ name }} search={namespaceSearch(namespace)}>
              {name}
            </Link>
            <span aria-hidden="true"> / </span>
            <span>edit</span>
          </>
        ) : (
          <span>new</span>
        )}
      </nav>
      <div className="page-header">
        <h1 id="editor-title">{title}</h1>
        {version !== undefined && <span className="muted">from version {version}</span>}
        <div className="spacer" />
        <span role="status" className={valid ? 'check-status ok' : 'check-status'}>
          {status}
        </span>
        <button
          type="button"
          className="primary"
          disabled={!valid || apply.isPending}
          onClick={() =>
            apply.mutate(text, {
              onSuccess: (a) =>
                void navigate({ to: '/dags/$name', params: { name: a.name }, search: namespaceSearch(namespace) }),
            })
          }
        >
          {apply.isPending ? 'Applying…' : 'Apply'}
        </button>
      </div>
      <p className="muted small editor-hint">
        YAML (or JSON). The text is checked as you type; Apply stores it as a new version, which becomes current.
      </p>
      <ErrorMessage error={apply.error} title="Applying failed" />
      <div className="editor-frame">
        <Suspense fallback={<p className="muted">Loading the editor…</p>}>
          <YamlEditor
            initial={initial}
            onChange={setText}
            check={check}
            onChecked={onChecked}
            handle={handle}
            label="Definition (YAML)"
            describedBy={problemsId}
          />
        </Suspense>
      </div>
      <section className="card" aria-labelledby="problems-title">
        <h2 id="problems-title">Problems</h2>
        {current instanceof Error && <ErrorMessage error={current} title="Checking the text failed" />}
        <div id={problemsId}>
          {problems.length === 0 ? (
            <p className="muted small">{current === undefined ? 'Checking…' : valid ? 'No problems.' : ''}</p>
          ) : (
            <ul className="problems">
              {problems.map((p, i) => (
                <li key={i} data-line={p.line} data-column={p.column ?? 0}>
                  <button type="button" className="link" onClick={() => handle.current?.focusAt(p.line, p.column)}>
                    {problemText(p)}
                  </button>
                </li>
              ))}
            </ul>
          )}
        </div>
      </section>
      {preview && (
        <section className="card" aria-labelledby="preview-title">
          <div className="card-header">
            <h2 id="preview-title">Graph</h2>
            {!valid && <span className="muted">of the last valid text</span>}
          </div>
          <Suspense fallback={<p className="muted">Loading the graph…</p>}>
            <DagGraph tasks={preview} label={`The graph of the text: ${plural(preview.length, 'task')}.`} />
          </Suspense>
        </section>
      )}
    </section>
  )
}
