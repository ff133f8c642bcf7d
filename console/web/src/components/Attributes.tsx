/** A run's search attributes as key=value tags. */
export function Attributes({ attrs }: { attrs: Record<string, string> | undefined }) {
  const entries = Object.entries(attrs ?? {}).sort(([a], [b]) => a.localeCompare(b))
  if (entries.length === 0) return <span className="muted">—</span>
  return (
    <ul className="tags">
      {entries.map(([k, v]) => (
        <li key={k} className="tag">
          {k}={v}
        </li>
      ))}
    </ul>
  )
}
