import { useEffect, useId, useRef, type ReactNode } from 'react'
import { ErrorMessage } from './ErrorMessage'

interface ConfirmDialogProps {
  title: string
  /** What confirming does, read out with the title. */
  description?: ReactNode
  confirmLabel: string
  /** Styles the confirm button as destructive. */
  danger?: boolean
  /** A wider dialog, for a form of many fields. */
  wide?: boolean
  pending?: boolean
  /** The confirm button waits: what the action needs has not loaded yet. */
  disabled?: boolean
  /** The refusal of the last try, shown above the buttons. */
  error?: unknown
  onConfirm: () => void
  onClose: () => void
  /** Form fields, and what a confirmed action answered. */
  children?: ReactNode
}

/**
 * A modal dialog (the native <dialog>: focus stays inside, Escape closes it)
 * that asks to confirm an action, with the fields it needs. It is open while
 * it is rendered: onClose asks the caller to stop rendering it, which it also
 * does once the action succeeded. Submitting the form confirms.
 */
export function ConfirmDialog(props: ConfirmDialogProps) {
  const { title, description, confirmLabel, danger, wide, pending, disabled, error, onConfirm, onClose, children } =
    props
  const ref = useRef<HTMLDialogElement>(null)
  // What had focus before the dialog (the button that opened it) gets it
  // back when the dialog goes away.
  const opener = useRef(document.activeElement)
  const titleId = useId()
  const descId = useId()

  useEffect(() => {
    const d = ref.current
    if (d && !d.open) d.showModal()
    const back = opener.current
    return () => {
      if (back instanceof HTMLElement) back.focus()
    }
  }, [])

  return (
    <dialog
      ref={ref}
      className={wide ? 'dialog wide' : 'dialog'}
      aria-labelledby={titleId}
      aria-describedby={description ? descId : undefined}
      onClose={onClose}
    >
      <form
        onSubmit={(e) => {
          e.preventDefault()
          if (!pending && !disabled) onConfirm()
        }}
      >
        <h2 id={titleId}>{title}</h2>
        {description && (
          <div id={descId} className="dialog-description">
            {description}
          </div>
        )}
        {children}
        <ErrorMessage error={error} />
        <div className="dialog-buttons">
          <button type="button" onClick={onClose}>
            Close
          </button>
          <button type="submit" className={danger ? 'danger' : 'primary'} disabled={pending || disabled}>
            {pending ? 'Working…' : confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  )
}
