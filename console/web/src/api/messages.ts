import { identity, path, request } from './client'

/** A mailbox as the list shows it (api.MailboxSummary). */
export interface MailboxSummary {
  name: string
  correlation_key: string
  kept: number
  waiting: number
  workflow_id: string
  run_id: string
  since: string
}

export interface MailboxList {
  mailboxes: MailboxSummary[]
  next_page_token?: string
}

export interface RunRefJson {
  namespace?: string
  workflow_id: string
  run_id?: string
}

/** A message a mailbox keeps (api.KeptMessage). */
export interface KeptMessage {
  message_id: string
  sent: string
  expires: string
  broadcast?: boolean
  priority?: number
  payload?: unknown
  sender?: string
  delivered_to?: RunRefJson[]
}

/** A mailbox now (api.MailboxDescription). */
export interface MailboxDescription {
  name: string
  correlation_key: string
  workflow_id: string
  run_id: string
  kept: KeptMessage[]
  waiting: { id: string; run: RunRefJson; since: string }[]
  delivered?: { message_id: string; run: RunRefJson; at: string; started?: boolean }[]
}

/** What the send form posts (api.SendMessageRequest). */
export interface SendMessageRequest {
  name: string
  correlation_key: string
  payload?: unknown
  /** Nanoseconds, as the API's durations are. */
  ttl?: number
  broadcast?: boolean
  priority?: number
  message_id?: string
}

export interface SendMessageResponse {
  message_id: string
  mailbox: RunRefJson
}

/** A rule that makes a message no run waits for start a workflow. */
export interface MessageRule {
  name: string
  workflow_type: string
  queue?: string
}

/** POST /namespaces/{ns}/messages: sends a message by name and correlation key. */
export function sendMessage(namespace: string, req: SendMessageRequest): Promise<SendMessageResponse> {
  return request('POST', path`/namespaces/${namespace}/messages`, { body: { ...req, identity } })
}

/** GET /namespaces/{ns}/mailboxes: the mailboxes that keep messages or have runs waiting. */
export function listMailboxes(namespace: string, name: string | undefined, signal?: AbortSignal): Promise<MailboxList> {
  return request('GET', path`/namespaces/${namespace}/mailboxes`, { query: { name, page_size: '500' }, signal })
}

/** GET /namespaces/{ns}/mailbox: one mailbox, from the mailbox itself. */
export function describeMailbox(
  namespace: string,
  name: string,
  key: string,
  signal?: AbortSignal,
): Promise<MailboxDescription> {
  return request('GET', path`/namespaces/${namespace}/mailbox`, { query: { name, correlation_key: key }, signal })
}

/** GET /namespaces/{ns}/message-rules. */
export function listMessageRules(namespace: string, signal?: AbortSignal): Promise<{ rules: MessageRule[] }> {
  return request('GET', path`/namespaces/${namespace}/message-rules`, { signal })
}

/** PUT /namespaces/{ns}/message-rules/{name}. */
export function putMessageRule(namespace: string, rule: MessageRule): Promise<void> {
  return request('PUT', path`/namespaces/${namespace}/message-rules/${rule.name}`, {
    body: { workflow_type: rule.workflow_type, queue: rule.queue },
  })
}

/** DELETE /namespaces/{ns}/message-rules/{name}. */
export function deleteMessageRule(namespace: string, name: string): Promise<void> {
  return request('DELETE', path`/namespaces/${namespace}/message-rules/${name}`)
}
