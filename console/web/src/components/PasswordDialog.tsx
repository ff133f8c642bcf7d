import { useState } from 'react'
import { changePassword } from '../api/access'
import { ConfirmDialog } from './ConfirmDialog'
import { FormField } from './FormField'

/** The shortest password the server takes (access.MinPassword). */
const minPassword = 8

/**
 * Changes the signed-in user's own password: the current one, and the new
 * one twice. Once it is changed the dialog says so, and how many of the
 * user's other sessions ended; this one stays signed in.
 */
export function PasswordDialog({ onClose }: { onClose: () => void }) {
  const [current, setCurrent] = useState('')
  const [next, setNext] = useState('')
  const [again, setAgain] = useState('')
  const [pending, setPending] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const [ended, setEnded] = useState<number | null>(null)

  const mismatch = again !== '' && again !== next ? 'The two new passwords differ.' : null
  const short = next !== '' && next.length < minPassword ? `At least ${minPassword} characters.` : null

  const submit = async () => {
    if (ended !== null) {
      onClose()
      return
    }
    if (mismatch || short || !current || !next) return
    setPending(true)
    setError(null)
    try {
      const r = await changePassword(current, next)
      setEnded(r.sessions_ended)
    } catch (err) {
      setError(err)
    } finally {
      setPending(false)
    }
  }

  return (
    <ConfirmDialog
      title="Change password"
      description={
        ended === null ? 'Your other signed-in sessions end; this one stays. API tokens stay too.' : undefined
      }
      confirmLabel={ended === null ? 'Change password' : 'Done'}
      pending={pending}
      error={error}
      onConfirm={() => void submit()}
      onClose={onClose}
    >
      {ended === null ? (
        <>
          <PasswordField
            label="Current password"
            autoComplete="current-password"
            autoFocus
            value={current}
            onChange={setCurrent}
          />
          <PasswordField label="New password" error={short} value={next} onChange={setNext} />
          <PasswordField label="New password again" error={mismatch} value={again} onChange={setAgain} />
        </>
      ) : (
        <p className="dialog-note" role="status">
          Your password is changed.{' '}
          {ended === 0
            ? 'You had no other session.'
            : `${ended} other session${ended === 1 ? '' : 's'} ended: sign in there again with the new password.`}
        </p>
      )}
    </ConfirmDialog>
  )
}

/** A required password input in its form field (a new password unless said otherwise). */
function PasswordField({
  label,
  error,
  autoComplete = 'new-password',
  autoFocus,
  value,
  onChange,
}: {
  label: string
  error?: string | null
  autoComplete?: string
  autoFocus?: boolean
  value: string
  onChange: (v: string) => void
}) {
  return (
    <FormField label={label} error={error}>
      {(c) => (
        <input
          {...c}
          type="password"
          autoComplete={autoComplete}
          required
          autoFocus={autoFocus}
          value={value}
          onChange={(e) => onChange(e.target.value)}
        />
      )}
    </FormField>
  )
}
