import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { MessagesPage } from './MessagesPage'

/** The messages page's filter, as its URL holds it. */
export interface MessagesSearch {
  /** Only the mailboxes of this message name. */
  name?: string
}

function validateMessagesSearch(raw: Record<string, unknown>): MessagesSearch {
  return typeof raw.name === 'string' && raw.name.trim() !== '' ? { name: raw.name.trim() } : {}
}

/** /namespaces/$namespace/messages: the mailboxes, a send form and the message rules. */
export const messagesRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/messages',
  validateSearch: validateMessagesSearch,
  component: MessagesPage,
})
