import { Link } from '@tanstack/react-router'
import type { ReactNode } from 'react'
import type { Namespace } from '../api/types'
import { namespaceSearch } from '../pages/dags/search'
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
  const [theme, toggleTheme] = useTheme()
  // The current namespace stays selectable while the list loads or if it
  // is not (or no longer) in it.
  const names = namespaces?.map((n) => n.name) ?? []
  if (!names.includes(namespace)) names.unshift(namespace)
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
        <nav aria-label="Main">
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
            <li>
              <Link to="/cluster">Cluster</Link>
            </li>
          </ul>
        </nav>
        <div className="header-tools">
          <label className="inline-field">
            <span>Namespace</span>
            <select value={namespace} onChange={(e) => onNamespaceChange(e.target.value)}>
              {names.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
          <button
            type="button"
            onClick={toggleTheme}
            aria-label={`Switch to ${theme === 'dark' ? 'light' : 'dark'} theme`}
            title="Theme"
          >
            {theme === 'dark' ? '☀ Light' : '☾ Dark'}
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  )
}
