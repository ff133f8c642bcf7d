import { useNavigate } from '@tanstack/react-router'
import { useId, useState } from 'react'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { useDag, useRunDag } from './queries'

interface Row {
  key: number
  name: string
  value: string
}

/**
 * Starts an instance of a DAG in a namespace: start parameters as
 * name=value rows (one per global parameter to begin with, its value the
 * definition's, shown as a placeholder: a row left empty keeps it) and an
 * optional instance id. A started instance's page opens.
 */
export function RunDialog({ name, namespace, onClose }: { name: string; namespace: string; onClose: () => void }) {
  const dag = useDag(name)
  const run = useRunDag(namespace, name)
  const navigate = useNavigate()
  const [id, setId] = useState('')
  const [added, setAdded] = useState<Row[]>([])
  const [edited, setEdited] = useState<Record<string, string>>({})
  const [next, setNext] = useState(1)
  const [invalid, setInvalid] = useState<Error | null>(null)
  const idField = useId()
  const globals = Object.entries(dag.data?.definition?.params ?? {}).sort(([a], [b]) => a.localeCompare(b))

  const submit = () => {
    const params: Record<string, string> = {}
    for (const [k] of globals) if (edited[k]) params[k] = edited[k]
    for (const r of added) {
      const k = r.name.trim()
      if (!k && !r.value) continue
      if (!k) return setInvalid(new Error('A parameter has a value but no name.'))
      params[k] = r.value
    }
    setInvalid(null)
    run.mutate(
      { id: id.trim() || undefined, params: Object.keys(params).length ? params : undefined },
      {
        onSuccess: (s) => {
          onClose()
          void navigate({
            to: '/dag-instances/$namespace/$workflowId',
            params: { namespace, workflowId: s.workflow_id },
          })
        },
      },
    )
  }

  return (
    <ConfirmDialog
      title={`Run ${name}`}
      description={
        <>
          Starts an instance of the current version in namespace <strong>{namespace}</strong>. A parameter left empty
          keeps the definition's value.
        </>
      }
      confirmLabel="Run"
      wide
      pending={run.isPending}
      error={invalid ?? run.error ?? dag.error}
      onConfirm={submit}
      onClose={onClose}
    >
      <div className="field">
        <label htmlFor={idField} className="field-label">
          Instance ID (optional)
        </label>
        <input
          id={idField}
          type="text"
          value={id}
          onChange={(e) => setId(e.target.value)}
          placeholder={`${name}-TIME-RANDOM`}
          spellCheck={false}
          autoFocus
        />
      </div>
      <fieldset className="fieldset">
        <legend>Parameters</legend>
        {globals.length === 0 && added.length === 0 && <p className="muted dialog-note">The DAG has no parameters.</p>}
        <div className="param-rows">
          {globals.map(([k, v]) => (
            <div className="param-row" key={`g-${k}`}>
              <input type="text" readOnly value={k} aria-label={`Name of parameter ${k}`} className="mono" />
              <span aria-hidden="true">=</span>
              <input
                type="text"
                value={edited[k] ?? ''}
                placeholder={v}
                aria-label={`Value of ${k}`}
                onChange={(e) => setEdited({ ...edited, [k]: e.target.value })}
                className="mono"
                spellCheck={false}
              />
              <span />
            </div>
          ))}
          {added.map((r, i) => (
            <div className="param-row" key={r.key}>
              <input
                type="text"
                value={r.name}
                aria-label={`Name of parameter ${globals.length + i + 1}`}
                placeholder="name"
                onChange={(e) => setAdded(added.map((x) => (x.key === r.key ? { ...x, name: e.target.value } : x)))}
                className="mono"
                spellCheck={false}
              />
              <span aria-hidden="true">=</span>
              <input
                type="text"
                value={r.value}
                aria-label={`Value of parameter ${globals.length + i + 1}`}
                placeholder="value"
                onChange={(e) => setAdded(added.map((x) => (x.key === r.key ? { ...x, value: e.target.value } : x)))}
                className="mono"
                spellCheck={false}
              />
              <button
                type="button"
                className="small"
                aria-label={`Remove parameter ${globals.length + i + 1}`}
                onClick={() => setAdded(added.filter((x) => x.key !== r.key))}
              >
                Remove
              </button>
            </div>
          ))}
        </div>
        <div>
          <button
            type="button"
            className="small"
            onClick={() => {
              setAdded([...added, { key: next, name: '', value: '' }])
              setNext(next + 1)
            }}
          >
            Add parameter
          </button>
        </div>
      </fieldset>
    </ConfirmDialog>
  )
}
