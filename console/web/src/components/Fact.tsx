import type { ReactNode } from 'react'

/** A term and its value in a definition list of facts (dl.facts). */
export function Fact({ term, children }: { term: string; children: ReactNode }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  )
}
