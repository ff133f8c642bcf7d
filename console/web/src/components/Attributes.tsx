/**
 * A run's search attributes as key=value tags. A value that holds JSON (an
 * object, a list, a quoted string) is shown as words: a list's items
 * comma-separated, an object's entries as name: value.
 */
export function Attributes({ attrs }: { attrs: Record<string, string> | undefined }) {
  const entries = Object.entries(attrs ?? {}).sort(([a], [b]) => a.localeCompare(b))
  if (entries.length === 0) return <span className="muted">—</span>
  return (
    <ul className="tags">
      {entries.map(([k, v]) => {
        const shown = readable(v)
        return (
          <li key={k} className="tag" title={shown === v ? undefined : v}>
            {k}={shown}
          </li>
        )
      })}
    </ul>
  )
}

/** A value as a person reads it: JSON in it unwrapped, anything else as it is. */
export function readable(v: string): string {
  const t = v.trim()
  if (!/^[[{"]/.test(t)) return v
  try {
    return words(JSON.parse(t) as unknown)
  } catch {
    return v
  }
}

function words(v: unknown): string {
  if (v === null) return '—'
  if (Array.isArray(v)) return v.map(words).join(', ')
  if (typeof v === 'object') {
    return Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${k}: ${words(x)}`)
      .join(', ')
  }
  return String(v)
}
