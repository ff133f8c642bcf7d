import { createRoute } from '@tanstack/react-router'
import { rootRoute } from '../root/route'
import { MailboxPage } from './MailboxPage'

/** The mailbox a page shows: a message name and a correlation key. */
export interface MailboxSearch {
  name: string
  key: string
}

function validateMailboxSearch(raw: Record<string, unknown>): MailboxSearch {
  return {
    name: typeof raw.name === 'string' ? raw.name : '',
    key: typeof raw.key === 'string' ? raw.key : typeof raw.key === 'number' ? String(raw.key) : '',
  }
}

/** /namespaces/$namespace/mailbox?name=…&key=…: one mailbox, as it is now. */
export const mailboxRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/namespaces/$namespace/mailbox',
  validateSearch: validateMailboxSearch,
  component: MailboxPage,
})
