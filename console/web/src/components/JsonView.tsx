import { useId, useState } from 'react'
import { decodePayload } from '../api/payload'
import type { Payload } from '../api/types'
import { useDocument, useDocumentRun } from './documents'
import { ErrorMessage } from './ErrorMessage'

/** Objects and arrays deeper than this start folded. */
const openDepth = 2

/** A JSON value as a tree whose objects and arrays fold. */
export function JsonView({ value }: { value: unknown }) {
  return (
    <div className="json">
      <CopyButton text={JSON.stringify(value, null, 2)} />
      <JsonNode value={value} depth={0} />
    </div>
  )
}

function JsonNode({ name, value, depth }: { name?: string; value: unknown; depth: number }) {
  const key = name !== undefined && <span className="json-key">{name}: </span>
  if (value === null || typeof value !== 'object') {
    return (
      <div className="json-line">
        {key}
        <Scalar value={value} />
      </div>
    )
  }
  const entries: [string, unknown][] = Array.isArray(value)
    ? value.map((v, i) => [String(i), v])
    : Object.entries(value as Record<string, unknown>)
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}']
  if (entries.length === 0) {
    return (
      <div className="json-line">
        {key}
        <span className="json-punct">{open + close}</span>
      </div>
    )
  }
  const n = entries.length
  const count = Array.isArray(value) ? `${n} item${n === 1 ? '' : 's'}` : `${n} key${n === 1 ? '' : 's'}`
  return (
    <details className="json-node" open={depth < openDepth}>
      <summary>
        {key}
        <span className="json-punct">{open}</span>
        <span className="json-count"> {count} </span>
      </summary>
      <div className="json-children">
        {entries.map(([k, v]) => (
          <JsonNode key={k} name={Array.isArray(value) ? undefined : JSON.stringify(k)} value={v} depth={depth + 1} />
        ))}
      </div>
      <span className="json-punct">{close}</span>
    </details>
  )
}

function Scalar({ value }: { value: unknown }) {
  if (typeof value === 'string') return <span className="json-string">{JSON.stringify(value)}</span>
  if (typeof value === 'number') return <span className="json-number">{String(value)}</span>
  if (typeof value === 'boolean') return <span className="json-bool">{String(value)}</span>
  return <span className="json-null">null</span>
}

/** Copies text to the clipboard (shown only where the browser allows it). */
function CopyButton({ text }: { text: string }) {
  const [copied, setCopied] = useState(false)
  if (!navigator.clipboard) return null
  return (
    <button
      type="button"
      className="copy small"
      onClick={() =>
        void navigator.clipboard.writeText(text).then(() => {
          setCopied(true)
          setTimeout(() => setCopied(false), 1500)
        })
      }
    >
      {copied ? 'Copied' : 'Copy'}
    </button>
  )
}

/** Whether a string payload reads better as text than as a JSON string: it has lines, or is long. */
function isText(s: string): boolean {
  return s.includes('\n') || s.length > 120
}

/** A string payload shown as the text it is (a log, a report), in a box that scrolls. */
function TextView({ text }: { text: string }) {
  return (
    <div className="json">
      <CopyButton text={text} />
      {/* Focusable: a box that scrolls must take the keyboard's arrows. */}
      <pre className="payload-text" tabIndex={0}>
        {text}
      </pre>
    </div>
  )
}

/** The bytes of base64 shown at most. */
const previewChars = 120

/**
 * A payload field: its JSON value as a tree, or what the console can say of
 * bytes that are not JSON (size, base64 and text previews) and of a payload
 * stored as a document (its id and size).
 */
export function PayloadView({ payload, empty = 'none' }: { payload: Payload | undefined; empty?: string }) {
  if (payload === undefined) return <span className="muted">{empty}</span>
  const p = decodePayload(payload)
  switch (p.kind) {
    case 'json':
      if (typeof p.value === 'string' && isText(p.value)) return <TextView text={p.value} />
      return <JsonView value={p.value} />
    case 'binary': {
      const text = textOf(p.base64)
      return (
        <div className="payload-special">
          <div>
            <span className="tag">binary</span> {formatBytes(p.size)}
          </div>
          <div className="mono wrap" title="base64">
            {p.base64.length > previewChars ? p.base64.slice(0, previewChars) + '…' : p.base64 || '(empty)'}
          </div>
          {text !== undefined && (
            <div className="mono wrap muted" title="as UTF-8 text">
              {text}
            </div>
          )}
        </div>
      )
    }
    case 'document':
      return <DocumentPayload id={p.id} size={p.size} />
  }
}

/**
 * A payload stored as a document: its size and id and, where the page names
 * the run (DocumentRun), a button that loads its value and shows it here.
 */
function DocumentPayload({ id, size }: { id: string; size: number }) {
  const run = useDocumentRun()
  const [shown, setShown] = useState(false)
  const doc = useDocument(run, id, shown)
  const valueId = useId()
  return (
    <div className="payload-special">
      <div className="payload-document">
        <span>
          <span className="tag">document</span> {formatBytes(size)}, stored apart
        </span>
        {run && (
          <button
            type="button"
            className="small"
            aria-expanded={shown}
            aria-controls={shown ? valueId : undefined}
            onClick={() => setShown(!shown)}
          >
            {shown ? 'Hide' : doc.data ? 'Show' : 'Load'}
            <span className="visually-hidden"> the document</span>
          </button>
        )}
      </div>
      <div className="mono muted wrap" title="document id">
        {id}
      </div>
      {shown && (
        <div id={valueId} className="document-value">
          {doc.isFetching && !doc.data && (
            <p className="muted small" role="status">
              Reading the document…
            </p>
          )}
          {doc.error && !doc.isFetching && (
            <div className="document-error">
              <ErrorMessage error={doc.error} title="Reading the document failed" />
              <button type="button" className="small" onClick={() => void doc.refetch()}>
                Try again
              </button>
            </div>
          )}
          {doc.data && <PayloadView payload={doc.data.value} empty="(no value)" />}
        </div>
      )}
    </div>
  )
}

/** The start of the bytes as text, when they are printable UTF-8. */
function textOf(base64: string): string | undefined {
  const cut = base64.length > previewChars
  let bin: string
  try {
    bin = atob(
      base64
        .slice(0, cut ? previewChars : undefined)
        .replace(/-/g, '+')
        .replace(/_/g, '/'),
    )
  } catch {
    return undefined
  }
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0))
  // stream: a character cut at the end of the preview is left out.
  const text = new TextDecoder('utf-8').decode(bytes, { stream: cut })
  if (/[\u0000-\u0008\u000e-\u001f\ufffd]/.test(text)) return undefined
  return cut ? text + '…' : text
}

/** "812 B", "14.2 KiB", "3.1 MiB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / 1024 / 1024).toFixed(1)} MiB`
}
