import type { Text } from '@codemirror/state'
import type { DagProblem } from '../../api/dags'

/** The place of a problem in the text: its token at line and column, or its whole line. */
export function problemRange(doc: Text, p: DagProblem): { from: number; to: number } {
  const line = doc.line(Math.min(Math.max(p.line, 1), doc.lines))
  if (!p.column || p.line < 1 || p.line > doc.lines) return { from: line.from, to: line.to }
  const from = Math.min(line.from + p.column - 1, line.to)
  const word = /^[^\s,[\]{}]+/.exec(line.text.slice(from - line.from))?.[0].length ?? 0
  return { from, to: Math.min(from + Math.max(word, 1), line.to) }
}

/** "Line 4, column 39: tasks[1].upstream[0]: unknown task "nope"". */
export function problemText(p: DagProblem): string {
  const where = p.line > 0 ? `Line ${p.line}${p.column ? `, column ${p.column}` : ''}` : 'Definition'
  return `${where}: ${p.field ? `${p.field}: ` : ''}${p.message}`
}
