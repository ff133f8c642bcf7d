import { Link } from '@tanstack/react-router'
import { defaultNamespace } from '../../api/namespaces'

/** What a URL that names no page shows. */
export function NotFound() {
  return (
    <section className="page">
      <h1>Page not found</h1>
      <p>
        Nothing is here.{' '}
        <Link to="/namespaces/$namespace/runs" params={{ namespace: defaultNamespace }}>
          Go to the runs
        </Link>
        .
      </p>
    </section>
  )
}
