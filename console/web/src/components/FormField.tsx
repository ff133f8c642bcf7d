import { useId, type ReactNode } from 'react'
import { ErrorMessage } from './ErrorMessage'

/** What a form field's control needs to be tied to its label, hint and error. */
export interface ControlProps {
  id: string
  'aria-invalid'?: true
  'aria-describedby'?: string
}

/**
 * A labelled control with an optional hint and the error that names it
 * (a refusal of the API for the field, or the form's own check), each tied
 * to the control: children draws the control with the props it is given.
 */
export function FormField({
  label,
  hint,
  error,
  children,
}: {
  label: string
  hint?: ReactNode
  error?: unknown
  children: (control: ControlProps) => ReactNode
}) {
  const id = useId()
  const hintId = `${id}-hint`
  const errorId = `${id}-error`
  const described = [hint ? hintId : '', error ? errorId : ''].filter(Boolean).join(' ')
  const control: ControlProps = { id }
  if (error) control['aria-invalid'] = true
  if (described) control['aria-describedby'] = described
  return (
    <div className="field">
      <label htmlFor={id} className="field-label">
        {label}
      </label>
      {children(control)}
      {hint && (
        <span id={hintId} className="small muted">
          {hint}
        </span>
      )}
      {error ? (
        <div id={errorId}>
          <ErrorMessage error={error} />
        </div>
      ) : null}
    </div>
  )
}
