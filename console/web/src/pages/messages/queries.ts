import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  deleteMessageRule,
  describeMailbox,
  listMailboxes,
  listMessageRules,
  putMessageRule,
  sendMessage,
  type MessageRule,
  type SendMessageRequest,
} from '../../api/messages'

/** How often the messages pages refresh while they are live. */
export const refreshMs = 2000

/** Query keys of messages; a send or a rule's change invalidates messagesKeys.all(ns). */
export const messagesKeys = {
  all: (namespace: string) => ['messages', namespace] as const,
  mailboxes: (namespace: string, name: string | undefined) =>
    [...messagesKeys.all(namespace), 'mailboxes', name ?? ''] as const,
  mailbox: (namespace: string, name: string, key: string) =>
    [...messagesKeys.all(namespace), 'mailbox', name, key] as const,
  rules: (namespace: string) => [...messagesKeys.all(namespace), 'rules'] as const,
}

/** The namespace's mailboxes, of one message name or all, refreshed while live. */
export function useMailboxes(namespace: string, name: string | undefined, live: boolean) {
  return useQuery({
    queryKey: messagesKeys.mailboxes(namespace, name),
    queryFn: ({ signal }) => listMailboxes(namespace, name, signal),
    refetchInterval: live ? refreshMs : false,
  })
}

/** One mailbox, asked of the mailbox itself, refreshed while live. */
export function useMailbox(namespace: string, name: string, key: string, live: boolean) {
  return useQuery({
    queryKey: messagesKeys.mailbox(namespace, name, key),
    queryFn: ({ signal }) => describeMailbox(namespace, name, key, signal),
    refetchInterval: live ? refreshMs : false,
  })
}

/** The namespace's message rules. */
export function useMessageRules(namespace: string) {
  return useQuery({
    queryKey: messagesKeys.rules(namespace),
    queryFn: ({ signal }) => listMessageRules(namespace, signal),
  })
}

/** Sends a message; the answer names it and its mailbox. */
export function useSendMessage(namespace: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (req: SendMessageRequest) => sendMessage(namespace, req),
    onSuccess: () => qc.invalidateQueries({ queryKey: messagesKeys.all(namespace) }),
  })
}

/** Puts a rule (a new one, or one that replaces the name's). */
export function usePutRule(namespace: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (rule: MessageRule) => putMessageRule(namespace, rule),
    onSuccess: () => qc.invalidateQueries({ queryKey: messagesKeys.rules(namespace) }),
  })
}

/** Deletes the rule of a message name. */
export function useDeleteRule(namespace: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (name: string) => deleteMessageRule(namespace, name),
    onSuccess: () => qc.invalidateQueries({ queryKey: messagesKeys.rules(namespace) }),
  })
}
