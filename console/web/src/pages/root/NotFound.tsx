import { Link } from '@tanstack/react-router'

/** What a URL that names no page shows. */
export function NotFound() {
  return (
    <section className="page">
      <h1>Page not found</h1>
      <p>
        Nothing is here. <Link to="/">Go to the runs</Link>.
      </p>
    </section>
  )
}
