import type { Payload } from './types'

/** A payload as the console shows it: a JSON value, bytes, or a document. */
export type DecodedPayload =
  | { kind: 'json'; value: unknown }
  | { kind: 'binary'; base64: string; size: number }
  | { kind: 'document'; id: string; size: number }

/**
 * Decodes a payload field: {"$base64": s} is bytes that are not JSON,
 * {"$document": {id, size}} a payload stored as a document of its own, and
 * {"$json": v} the JSON value v (wrapped because it looks like one of the
 * three forms). Anything else is the JSON value itself.
 */
export function decodePayload(p: Payload): DecodedPayload {
  if (p === null || typeof p !== 'object' || Array.isArray(p)) return { kind: 'json', value: p }
  const keys = Object.keys(p)
  if (keys.length !== 1) return { kind: 'json', value: p }
  const o = p as Record<string, unknown>
  if ('$json' in o) return { kind: 'json', value: o.$json }
  if (typeof o.$base64 === 'string') return { kind: 'binary', base64: o.$base64, size: base64Size(o.$base64) }
  const doc = o.$document
  if (doc && typeof doc === 'object') {
    const { id, size } = doc as { id?: unknown; size?: unknown }
    if (typeof id === 'string' && typeof size === 'number') return { kind: 'document', id, size }
  }
  return { kind: 'json', value: p }
}

/** The number of bytes a standard or URL-safe base64 string holds. */
export function base64Size(s: string): number {
  const body = s.replace(/=+$/, '')
  return Math.floor((body.length * 3) / 4)
}
