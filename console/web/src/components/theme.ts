import { useCallback, useSyncExternalStore } from 'react'

/** The console's two color themes. */
export type Theme = 'light' | 'dark'

const storageKey = 'strand.theme'

/** The theme last chosen here, or else the system's preference. */
export function initialTheme(): Theme {
  const saved = localStorage.getItem(storageKey)
  if (saved === 'light' || saved === 'dark') return saved
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'
}

/** Sets the theme on the document: the CSS variables follow it. */
export function applyTheme(t: Theme): void {
  document.documentElement.dataset.theme = t
}

function subscribe(onChange: () => void): () => void {
  const observer = new MutationObserver(onChange)
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] })
  return () => observer.disconnect()
}

const current = (): Theme => (document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light')

/**
 * The theme in force, and a function that switches it and remembers the
 * choice. Components that draw with the theme's colors outside CSS (charts)
 * re-render when it changes.
 */
export function useTheme(): [Theme, () => void] {
  const theme = useSyncExternalStore(subscribe, current)
  const toggle = useCallback(() => {
    const next = current() === 'dark' ? 'light' : 'dark'
    localStorage.setItem(storageKey, next)
    applyTheme(next)
  }, [])
  return [theme, toggle]
}

/** The value of a CSS variable of the theme in force ("--ok" → "#2e9d57"). */
export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim()
}
