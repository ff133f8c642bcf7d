import Form from '@rjsf/core'
import type { RJSFSchema } from '@rjsf/utils'
import validator from '@rjsf/validator-ajv8'
import { useState } from 'react'

/**
 * The form of a task, drawn from its JSON Schema by react-jsonschema-form
 * and checked by it (ajv) before anything is sent: a button per outcome
 * submits it. Loaded apart, as it is large.
 */
export default function TaskForm({
  schema,
  initial,
  outcomes,
  pending,
  disabled = false,
  onComplete,
}: {
  schema: Record<string, unknown> | undefined
  initial: unknown
  outcomes: string[]
  pending: boolean
  /** Shown but not filled in: the task is not the user's to complete (yet). */
  disabled?: boolean
  onComplete: (outcome: string, data: unknown) => void
}) {
  const [data, setData] = useState<unknown>(initial)
  const [outcome, setOutcome] = useState(outcomes[0] ?? '')
  return (
    <Form
      schema={(schema ?? {}) as RJSFSchema}
      validator={validator}
      formData={data}
      onChange={(e) => setData(e.formData)}
      onSubmit={(e) => onComplete(outcome, e.formData)}
      showErrorList="top"
      disabled={disabled}
      noHtml5Validate
      // The errors are on the form; rjsf would also log them as console errors.
      onError={() => {}}
    >
      <div className="actions">
        {outcomes.map((o) => (
          <button
            key={o}
            type="submit"
            className="primary"
            disabled={pending || disabled}
            onClick={() => setOutcome(o)}
          >
            Complete: {o}
          </button>
        ))}
      </div>
    </Form>
  )
}
