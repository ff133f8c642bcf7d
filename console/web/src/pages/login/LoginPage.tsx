import { useQueryClient } from '@tanstack/react-query'
import { getRouteApi, useRouter } from '@tanstack/react-router'
import { useId, useState } from 'react'
import { login } from '../../api/access'
import { ApiError } from '../../api/client'

const route = getRouteApi('/login')

/**
 * The login form of a server that controls access: a user name and a
 * password make a session (a cookie the browser keeps), and the console
 * goes back to the page that sent the user here, or to the start.
 */
export function LoginPage() {
  const { next } = route.useSearch()
  const router = useRouter()
  const qc = useQueryClient()
  const [name, setName] = useState('')
  const [password, setPassword] = useState('')
  const [pending, setPending] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const id = useId()

  const submit = async (e: React.FormEvent) => {
    e.preventDefault()
    if (pending) return
    setPending(true)
    setError(null)
    try {
      await login(name.trim(), password)
    } catch (err) {
      setError(err)
      setPending(false)
      return
    }
    // What was read before, as someone else or as no one, is not this
    // user's: who-am-I and every page read again.
    qc.removeQueries()
    await router.navigate({ href: next ?? '/', replace: true })
  }

  return (
    <section className="login" aria-labelledby="login-title">
      <form className="card login-card" onSubmit={(e) => void submit(e)} aria-labelledby="login-title">
        <h1 id="login-title">Log in</h1>
        <p className="muted">This Strand server controls access: log in with your user name and password.</p>
        <div className="field">
          <label htmlFor={`${id}-name`} className="field-label">
            User name
          </label>
          <input
            id={`${id}-name`}
            type="text"
            name="username"
            autoComplete="username"
            autoCapitalize="off"
            spellCheck={false}
            required
            autoFocus
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-password`} className="field-label">
            Password
          </label>
          <input
            id={`${id}-password`}
            type="password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </div>
        {error ? (
          <div className="error" role="alert">
            <strong>Logging in failed: </strong>
            {error instanceof ApiError
              ? error.message
              : `the server did not answer (${error instanceof Error ? error.message : String(error)}).`}
          </div>
        ) : null}
        <button type="submit" className="primary" disabled={pending}>
          {pending ? 'Logging in…' : 'Log in'}
        </button>
      </form>
    </section>
  )
}
