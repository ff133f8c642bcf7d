import type { ReactNode } from 'react'

/** The smallest scale a graph is drawn at: its 13 px names stay readable (about 10 px). */
export const readableZoom = 0.75

/**
 * The box of a drawing that is never drawn smaller than readable: given
 * the drawing's full width, the box is at least readableZoom of it wide,
 * and on a narrow screen it scrolls sideways inside (the page does not).
 */
export function GraphScroll({ width, label, children }: { width: number; label: string; children: ReactNode }) {
  const minWidth = Math.ceil(width * readableZoom + 40)
  return (
    // Focusable: it may scroll, by keyboard too.
    <div className="graph-scroll" tabIndex={0} role="region" aria-label={`${label} (scrolls sideways)`}>
      <div style={{ minWidth }}>{children}</div>
    </div>
  )
}
