import { useState } from 'react'
import type { AlertGroup, AlertGroupInfo } from '../../api/alerts'
import { ApiError } from '../../api/client'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { FormField } from '../../components/FormField'
import { useSetAlertGroup } from './queries'

/** A list typed as text: one entry a line, or separated by commas. */
function parseList(s: string): string[] {
  return s
    .split(/[\n,]/)
    .map((x) => x.trim())
    .filter(Boolean)
}

/**
 * Creates a group (no group given) or edits one: its users and addresses
 * to email, copies, and webhook. The whole group is sent: its webhook's
 * headers are carried as read.
 */
export function AlertGroupDialog({
  group,
  onClose,
  onSaved,
}: {
  group?: AlertGroupInfo
  onClose: () => void
  onSaved: (g: AlertGroupInfo) => void
}) {
  const [name, setName] = useState(group?.name ?? '')
  const [description, setDescription] = useState(group?.description ?? '')
  const [users, setUsers] = useState((group?.users ?? []).join(', '))
  const [emails, setEmails] = useState((group?.emails ?? []).join(', '))
  const [cc, setCc] = useState((group?.cc ?? []).join(', '))
  const [url, setUrl] = useState(group?.url ?? '')
  const save = useSetAlertGroup()
  const field = save.error instanceof ApiError ? save.error.body.field : undefined
  const errorOf = (f: string) => (field === f ? save.error : undefined)
  return (
    <ConfirmDialog
      title={group ? `Edit alert group ${group.name}` : 'New alert group'}
      description="A DAG names its alert group in warning.group: its alerts are emailed to the group's users and addresses, and posted to its webhook."
      confirmLabel={group ? 'Save changes' : 'Create alert group'}
      pending={save.isPending}
      error={field && ['users', 'emails', 'cc', 'url'].includes(field) ? null : save.error}
      onClose={onClose}
      onConfirm={() => {
        const g: AlertGroup = {
          description: description.trim() || undefined,
          users: parseList(users),
          emails: parseList(emails),
          cc: parseList(cc),
          url: url.trim() || undefined,
          headers: group?.headers,
        }
        save.mutate(
          { name: name.trim(), group: g },
          {
            onSuccess: (got) => {
              onSaved(got)
              onClose()
            },
          },
        )
      }}
    >
      {!group && (
        <FormField label="Name" error={errorOf('name')}>
          {(c) => (
            <input
              {...c}
              type="text"
              required
              autoFocus
              maxLength={100}
              value={name}
              onChange={(e) => setName(e.target.value)}
              spellCheck={false}
              autoComplete="off"
            />
          )}
        </FormField>
      )}
      <FormField label="Description (optional)">
        {(c) => (
          <input
            {...c}
            type="text"
            maxLength={1000}
            value={description}
            onChange={(e) => setDescription(e.target.value)}
          />
        )}
      </FormField>
      <FormField
        label="Users"
        hint="Strand users, emailed at their own address; separated by commas."
        error={errorOf('users')}
      >
        {(c) => (
          <input {...c} type="text" value={users} onChange={(e) => setUsers(e.target.value)} spellCheck={false} />
        )}
      </FormField>
      <FormField label="Email addresses" hint="More addresses to email; separated by commas." error={errorOf('emails')}>
        {(c) => (
          <input
            {...c}
            type="text"
            inputMode="email"
            value={emails}
            onChange={(e) => setEmails(e.target.value)}
            spellCheck={false}
          />
        )}
      </FormField>
      <FormField label="Cc" hint="Addresses copied on each email." error={errorOf('cc')}>
        {(c) => (
          <input
            {...c}
            type="text"
            inputMode="email"
            value={cc}
            onChange={(e) => setCc(e.target.value)}
            spellCheck={false}
          />
        )}
      </FormField>
      <FormField label="Webhook URL (optional)" hint="Each alert is posted to it as JSON." error={errorOf('url')}>
        {(c) => <input {...c} type="url" value={url} onChange={(e) => setUrl(e.target.value)} spellCheck={false} />}
      </FormField>
    </ConfirmDialog>
  )
}
