import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands'
import { yaml } from '@codemirror/lang-yaml'
import { bracketMatching, HighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language'
import { lintGutter, linter, type Diagnostic } from '@codemirror/lint'
import { EditorState } from '@codemirror/state'
import {
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
} from '@codemirror/view'
import { tags } from '@lezer/highlight'
import { useEffect, useRef, type RefObject } from 'react'
import type { DagCheck } from '../../api/dags'
import { problemRange, problemText } from './problems'

/** What the page can do to the editor: move the cursor to a problem. */
export interface EditorHandle {
  focusAt: (line: number, column: number | undefined) => void
}

interface YamlEditorProps {
  /** The text the editor starts with (read once). */
  initial: string
  /** Each change of the text, at once. */
  onChange: (text: string) => void
  /**
   * Checks a text (debounced: lint's delay after the last change); the
   * editor marks the problems of the answer at their lines and columns.
   */
  check: (text: string) => Promise<DagCheck>
  /** Each answer of check, for the text it checked (never a stale one). */
  onChecked: (text: string, result: DagCheck | Error) => void
  handle: RefObject<EditorHandle | null>
  label: string
  /** The id of what describes the editor (the problems' list). */
  describedBy?: string
}

/** Milliseconds of quiet after a change before the text is checked. */
const checkDelay = 400

/** The theme's colours: the console's CSS variables, so that both themes follow. */
const highlight = HighlightStyle.define([
  { tag: tags.definition(tags.propertyName), color: 'var(--json-key)' },
  { tag: [tags.string, tags.special(tags.string)], color: 'var(--json-string)' },
  { tag: [tags.keyword, tags.typeName, tags.labelName], color: 'var(--json-bool)' },
  { tag: [tags.lineComment, tags.meta, tags.separator], color: 'var(--muted)' },
])

const theme = EditorView.theme({
  '&': { backgroundColor: 'var(--surface)', color: 'var(--text)', fontSize: '13px' },
  '.cm-content': {
    fontFamily: "ui-monospace, 'SF Mono', Menlo, Consolas, 'Liberation Mono', monospace",
    caretColor: 'var(--text)',
  },
  '.cm-cursor': { borderLeftColor: 'var(--text)' },
  '.cm-gutters': { backgroundColor: 'var(--surface-2)', color: 'var(--muted)', borderRight: '1px solid var(--border)' },
  '.cm-activeLine': { backgroundColor: 'color-mix(in srgb, var(--info-bg) 45%, transparent)' },
  '.cm-activeLineGutter': { backgroundColor: 'var(--info-bg)', color: 'var(--text)' },
  '&.cm-focused .cm-selectionBackground, .cm-selectionBackground': { backgroundColor: 'var(--info-bg)' },
  '&.cm-focused': { outline: '2px solid var(--focus)', outlineOffset: '-1px' },
  '.cm-tooltip': { backgroundColor: 'var(--surface)', color: 'var(--text)', border: '1px solid var(--border)' },
})

/**
 * A YAML editor (CodeMirror 6) that checks its text as it is typed: after
 * a pause, check runs, and each problem of its answer is marked in place
 * (underlined at its line and column, a marker in the gutter, the message
 * on hover). Loaded lazily, with the first editor.
 */
export default function YamlEditor(props: YamlEditorProps) {
  const box = useRef<HTMLDivElement>(null)
  // The callbacks of the last render: the editor is made once.
  const latest = useRef(props)
  latest.current = props

  useEffect(() => {
    const parent = box.current
    if (!parent) return
    const lint = linter(
      async (view) => {
        const doc = view.state.doc
        const text = doc.toString()
        let result: DagCheck | Error
        try {
          result = text.trim() === '' ? { valid: false, problems: [] } : await latest.current.check(text)
        } catch (e) {
          result = e instanceof Error ? e : new Error(String(e))
        }
        // A text changed since is checked again: this answer is stale.
        if (view.state.doc !== doc) return []
        latest.current.onChecked(text, result)
        if (result instanceof Error) return []
        return (result.problems ?? []).map((p): Diagnostic => {
          const { from, to } = problemRange(doc, p)
          return { from, to, severity: 'error', message: problemText(p), source: 'strand' }
        })
      },
      { delay: checkDelay },
    )
    const view = new EditorView({
      parent,
      state: EditorState.create({
        doc: latest.current.initial,
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          history(),
          drawSelection(),
          indentOnInput(),
          bracketMatching(),
          highlightActiveLine(),
          keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
          yaml(),
          syntaxHighlighting(highlight),
          theme,
          lintGutter(),
          lint,
          EditorState.tabSize.of(2),
          EditorView.contentAttributes.of({
            'aria-label': latest.current.label,
            ...(latest.current.describedBy ? { 'aria-describedby': latest.current.describedBy } : {}),
          }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) latest.current.onChange(u.state.doc.toString())
          }),
        ],
      }),
    })
    latest.current.handle.current = {
      focusAt(line, column) {
        const { from } = problemRange(view.state.doc, { line, column, message: '' })
        view.dispatch({ selection: { anchor: from }, scrollIntoView: true })
        view.focus()
      },
    }
    return () => {
      latest.current.handle.current = null
      view.destroy()
    }
  }, [])

  return <div ref={box} className="yaml-editor" />
}
