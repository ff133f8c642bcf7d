import { useState } from 'react'

/** Where a paged list stands: the tokens of the pages before this one are a stack. */
export interface Pages {
  before: (string | undefined)[]
  token: string | undefined
}

/** The state of a pager: the current page's token and a way to move. */
export function usePages(): [Pages, (p: Pages) => void] {
  return useState<Pages>({ before: [], token: undefined })
}

/**
 * Previous and Next buttons over a list read in pages by token. next is
 * the answer's next_page_token; waiting disables Next while the page shown
 * is a placeholder for the one being read.
 */
export function Pager({
  pages,
  setPages,
  next,
  waiting,
}: {
  pages: Pages
  setPages: (p: Pages) => void
  next: string | undefined
  waiting: boolean
}) {
  return (
    <div className="pager" role="group" aria-label="Pages">
      <button
        type="button"
        disabled={pages.before.length === 0}
        onClick={() => setPages({ before: pages.before.slice(0, -1), token: pages.before.at(-1) })}
      >
        ← Previous
      </button>
      <span className="muted">Page {pages.before.length + 1}</span>
      <button
        type="button"
        disabled={!next || waiting}
        onClick={() => setPages({ before: [...pages.before, pages.token], token: next })}
      >
        Next →
      </button>
    </div>
  )
}
