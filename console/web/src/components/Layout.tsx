import { useQueryClient } from '@tanstack/react-query'
import { Link, useNavigate, useRouterState } from '@tanstack/react-router'
import { useEffect, useRef, useState, type ReactNode } from 'react'
import { logout } from '../api/access'
import type { Namespace } from '../api/types'
import { namespaceSearch } from '../pages/dags/search'
import { mayReadAudit, useAccess } from './access'
import { PasswordDialog } from './PasswordDialog'
import { useTheme } from './theme'

interface LayoutProps {
  namespace: string
  /** The namespaces to choose from (undefined while they load). */
  namespaces: Namespace[] | undefined
  onNamespaceChange: (name: string) => void
  children: ReactNode
}

/** The frame of every page: the header with navigation, namespace and theme. */
export function Layout({ namespace, namespaces, onNamespaceChange, children }: LayoutProps) {
  const access = useAccess()
  // The current namespace stays selectable while the list loads or if it
  // is not (or no longer) in it.
  const names = namespaces?.map((n) => n.name) ?? []
  if (!names.includes(namespace)) names.unshift(namespace)
  // On a narrow screen the navigation is a menu the button opens; going to
  // a page (or Escape) closes it.
  const [menuOpen, setMenuOpen] = useState(false)
  const menuButton = useRef<HTMLButtonElement>(null)
  const href = useRouterState({ select: (s) => s.location.href })
  useEffect(() => setMenuOpen(false), [href])
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="header">
        <Link to="/" className="brand">
          <img src="/favicon.svg" alt="" width="22" height="22" />
          Strand
        </Link>
        <button
          type="button"
          ref={menuButton}
          className="menu-button"
          aria-expanded={menuOpen}
          aria-controls="main-nav"
          onClick={() => setMenuOpen((o) => !o)}
        >
          <span aria-hidden="true" className="menu-icon">
            {menuOpen ? '✕' : '☰'}
          </span>
          Menu
        </button>
        <nav
          aria-label="Main"
          id="main-nav"
          className={menuOpen ? 'open' : undefined}
          // A link of the menu closes it, even the page already open.
          onClick={(e) => {
            if (e.target instanceof Element && e.target.closest('a')) setMenuOpen(false)
          }}
          onKeyDown={(e) => {
            if (e.key === 'Escape' && menuOpen) {
              setMenuOpen(false)
              menuButton.current?.focus()
            }
          }}
        >
          <ul className="nav">
            <li>
              <Link to="/namespaces/$namespace/overview" params={{ namespace }}>
                Overview
              </Link>
            </li>
            <li>
              <Link to="/namespaces/$namespace/runs" params={{ namespace }}>
                Runs
              </Link>
            </li>
            <li>
              <Link to="/namespaces/$namespace/schedules" params={{ namespace }}>
                Schedules
              </Link>
            </li>
            <li>
              <Link to="/namespaces/$namespace/batches" params={{ namespace }}>
                Batches
              </Link>
            </li>
            <li>
              <Link to="/namespaces/$namespace/tasks" params={{ namespace }}>
                Tasks
              </Link>
            </li>
            <li>
              <Link to="/namespaces/$namespace/messages" params={{ namespace }}>
                Messages
              </Link>
            </li>
            <li>
              <Link to="/namespaces/$namespace/queues" params={{ namespace }}>
                Queues
              </Link>
            </li>
            <li>
              <Link to="/dags" search={namespaceSearch(namespace)} activeOptions={{ includeSearch: false }}>
                DAGs
              </Link>
            </li>
            <li>
              <Link to="/alert-groups">Alert groups</Link>
            </li>
            <li>
              <Link to="/resources">Resources</Link>
            </li>
            <li>
              <Link to="/statemachines" search={namespaceSearch(namespace)} activeOptions={{ includeSearch: false }}>
                State machines
              </Link>
            </li>
            <li>
              <Link to="/namespaces/$namespace/sagas" params={{ namespace }}>
                Sagas
              </Link>
            </li>
            <li>
              {/* Exact: the runs of a namespace are under /namespaces too. */}
              <Link to="/namespaces" activeOptions={{ exact: true }}>
                Namespaces
              </Link>
            </li>
            {/* The audit log is its admins' only: the others do not see the link. */}
            {mayReadAudit(access) && (
              <li>
                <Link to="/audit" activeOptions={{ includeSearch: false }}>
                  Audit log
                </Link>
              </li>
            )}
            <li>
              <Link to="/cluster">Cluster</Link>
            </li>
          </ul>
        </nav>
        <div className="header-tools">
          <label className="inline-field">
            <span>Namespace</span>
            <select value={namespace} onChange={(e) => onNamespaceChange(e.target.value)} title="Namespace">
              {names.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
          <ThemeButton />
          <User />
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  )
}

/** The frame of the login page: the brand and the theme, no navigation (nothing can be read yet). */
export function LoginFrame({ children }: { children: ReactNode }) {
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="header">
        <span className="brand">
          <img src="/favicon.svg" alt="" width="22" height="22" />
          Strand
        </span>
        <div className="header-tools">
          <ThemeButton />
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  )
}

/** Switches between the light and the dark theme. */
function ThemeButton() {
  const [theme, toggleTheme] = useTheme()
  const label = `Switch to ${theme === 'dark' ? 'light' : 'dark'} theme`
  return (
    <button type="button" className="theme-button" onClick={toggleTheme} aria-label={label} title={label}>
      {/* The icon alone: the navigation needs the room. */}
      <span aria-hidden="true">{theme === 'dark' ? '☀' : '☾'}</span>
    </button>
  )
}

/**
 * Who is logged in, and the button that logs them out: on a server that
 * controls access only. Logging out opens the login page, ends the session
 * on the server (even if that fails, the console forgets it) and leaves
 * nothing of the session's in the cache.
 */
function User() {
  const access = useAccess()
  const qc = useQueryClient()
  const navigate = useNavigate()
  const [pending, setPending] = useState(false)
  const [changing, setChanging] = useState(false)
  if (!access.accessControl) return null
  const out = async () => {
    setPending(true)
    // The page goes first, and what it was reading with it: nothing is
    // asked with a session that is ending.
    await navigate({ to: '/login', replace: true })
    await qc.cancelQueries()
    try {
      await logout()
    } catch {
      // A session already gone, or a server that did not answer: the login
      // page is where the user is either way.
    }
    qc.removeQueries()
  }
  return (
    <div className="user">
      <span className="user-name" title={access.clusterAdmin ? 'Cluster admin' : undefined}>
        <span className="visually-hidden">Logged in as </span>
        {access.name}
      </span>
      {access.kind === 'user' && (
        <button type="button" onClick={() => setChanging(true)} title="Change your password">
          Password
        </button>
      )}
      <button type="button" onClick={() => void out()} disabled={pending}>
        Log out
      </button>
      {changing && <PasswordDialog onClose={() => setChanging(false)} />}
    </div>
  )
}
