import { useState } from 'react'

/** A variable row of a form. */
export interface VarRow {
  key: number
  name: string
  value: string
}

/** The rows as variables; an error when a row has a value but no name. */
export function rowsToVars(rows: VarRow[]): Record<string, string> | Error | undefined {
  const vars: Record<string, string> = {}
  for (const r of rows) {
    const k = r.name.trim()
    if (!k && !r.value) continue
    if (!k) return new Error('A variable has a value but no name.')
    vars[k] = r.value
  }
  return Object.keys(vars).length ? vars : undefined
}

/** The state of a form's variable rows. */
export function useVarRows() {
  const [rows, setRows] = useState<VarRow[]>([])
  const [next, setNext] = useState(1)
  return {
    rows,
    add: () => {
      setRows([...rows, { key: next, name: '', value: '' }])
      setNext(next + 1)
    },
    set: (key: number, change: Partial<VarRow>) => setRows(rows.map((r) => (r.key === key ? { ...r, ...change } : r))),
    remove: (key: number) => setRows(rows.filter((r) => r.key !== key)),
    clear: () => setRows([]),
  }
}

/** Variables as name = value rows, with Add and Remove. */
export function VarRows({ form }: { form: ReturnType<typeof useVarRows> }) {
  return (
    <fieldset className="fieldset">
      <legend>Variables</legend>
      <div className="param-rows">
        {form.rows.map((r, i) => (
          <div className="param-row" key={r.key}>
            <input
              type="text"
              value={r.name}
              aria-label={`Name of variable ${i + 1}`}
              placeholder="name"
              onChange={(e) => form.set(r.key, { name: e.target.value })}
              className="mono"
              spellCheck={false}
            />
            <span aria-hidden="true">=</span>
            <input
              type="text"
              value={r.value}
              aria-label={`Value of variable ${i + 1}`}
              placeholder="value"
              onChange={(e) => form.set(r.key, { value: e.target.value })}
              className="mono"
              spellCheck={false}
            />
            <button
              type="button"
              className="small"
              aria-label={`Remove variable ${i + 1}`}
              onClick={() => form.remove(r.key)}
            >
              Remove
            </button>
          </div>
        ))}
      </div>
      <div>
        <button type="button" className="small" onClick={form.add}>
          Add variable
        </button>
      </div>
    </fieldset>
  )
}
