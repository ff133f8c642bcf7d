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
          <FormField label="Current password">
            {(c) => (
              <input
                {...c}
                type="password"
                autoComplete="current-password"
                required
                autoFocus
                value={current}
                onChange={(e) => setCurrent(e.target.value)}
              />
            )}
          </FormField>
          <FormField label="New password" error={short}>
            {(c) => (
              <input
                {...c}
                type="password"
                autoComplete="new-password"
                required
                value={next}
                onChange={(e) => setNext(e.target.value)}
              />
            )}
          </FormField>
          <FormField label="New password again" error={mismatch}>
            {(c) => (
              <input
                {...c}
                type="password"
                autoComplete="new-password"
                required
                value={again}
                onChange={(e) => setAgain(e.target.value)}
              />
            )}
          </FormField>
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
