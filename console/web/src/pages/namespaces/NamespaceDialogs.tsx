import { useId, useState } from 'react'
import { ApiError } from '../../api/client'
import type { Namespace } from '../../api/types'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { useCreateNamespace, useUpdateNamespace } from './queries'
import { parseRetention, retentionDraft, type RetentionDraft, type RetentionUnit } from './retention'

/** The longest name and description the server takes (store.Namespace). */
const maxName = 63
const maxDescription = 4096

/** Asks for a new namespace's name, description and retention, and creates it. */
export function CreateNamespaceDialog({
  onClose,
  onCreated,
}: {
  onClose: () => void
  onCreated: (ns: Namespace) => void
}) {
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const [retention, setRetention] = useState<RetentionDraft>({ amount: '', unit: 'days' })
  const [invalid, setInvalid] = useState<Error | null>(null)
  const create = useCreateNamespace()
  return (
    <ConfirmDialog
      title="New namespace"
      description="A namespace isolates workflows; its closed runs are kept for its retention, then removed."
      confirmLabel="Create namespace"
      pending={create.isPending}
      error={invalid ?? create.error}
      onClose={onClose}
      onConfirm={() => {
        const r = parseRetention(retention)
        setInvalid(r instanceof Error ? r : null)
        if (r instanceof Error) return
        const ns: Namespace = { name: name.trim(), description: description.trim() }
        if (r !== undefined) ns.retention = r
        create.mutate(ns, {
          onSuccess: (got) => {
            onCreated(got)
            onClose()
          },
        })
      }}
    >
      <label className="field">
        <span>Name</span>
        <input
          type="text"
          required
          autoFocus
          maxLength={maxName}
          value={name}
          onChange={(e) => setName(e.target.value)}
          spellCheck={false}
          autoComplete="off"
        />
      </label>
      <DescriptionField value={description} onChange={setDescription} />
      <RetentionField
        value={retention}
        onChange={setRetention}
        hint="Left blank: the server's default. At least 1 minute."
      />
    </ConfirmDialog>
  )
}

/**
 * Edits a namespace's description and retention. The update carries the
 * version read when the dialog opened: if the namespace changed since, the
 * server refuses it, and the dialog says so.
 */
export function EditNamespaceDialog({
  namespace,
  onClose,
  onSaved,
}: {
  namespace: Namespace
  onClose: () => void
  onSaved: (ns: Namespace) => void
}) {
  // What the dialog opened with: a refresh of the list behind it does not
  // change the version it carries.
  const [read] = useState(namespace)
  const initial = retentionDraft(read.retention)
  const [description, setDescription] = useState(read.description ?? '')
  const [retention, setRetention] = useState<RetentionDraft>(initial)
  const [invalid, setInvalid] = useState<Error | null>(null)
  const update = useUpdateNamespace()
  const conflict = update.error instanceof ApiError && update.error.code === 'conflict'
  return (
    <ConfirmDialog
      title={`Edit namespace ${read.name}`}
      description={
        <>
          Changes the description and retention of <strong>{read.name}</strong> as read at version {read.version ?? 0}.
          A shorter retention removes closed runs sooner.
        </>
      }
      confirmLabel="Save changes"
      pending={update.isPending}
      error={invalid ?? update.error}
      onClose={onClose}
      onConfirm={() => {
        // An untouched retention is sent as read, not as its rounded form.
        const unchanged = retention.amount === initial.amount && retention.unit === initial.unit
        let r = unchanged ? read.retention : parseRetention(retention)
        if (r === undefined) r = new Error('Retention: enter a number of hours or days.')
        setInvalid(r instanceof Error ? r : null)
        if (r instanceof Error) return
        const ns: Namespace = { name: read.name, description: description.trim(), retention: r, version: read.version }
        // The update replaces the namespace's data: carry it as read.
        if (read.data) ns.data = read.data
        update.mutate(ns, {
          onSuccess: (got) => {
            onSaved(got)
            onClose()
          },
        })
      }}
    >
      <DescriptionField value={description} onChange={setDescription} autoFocus />
      <RetentionField value={retention} onChange={setRetention} required hint="At least 1 minute." />
      {conflict && (
        <p className="small muted dialog-note">
          Someone changed this namespace after you opened the dialog. Close it and edit again to start from the current
          version.
        </p>
      )}
    </ConfirmDialog>
  )
}

function DescriptionField(props: { value: string; onChange: (s: string) => void; autoFocus?: boolean }) {
  return (
    <label className="field">
      <span>Description (optional)</span>
      <textarea
        rows={3}
        maxLength={maxDescription}
        autoFocus={props.autoFocus}
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
      />
    </label>
  )
}

/** A number and its unit, in a fieldset named Retention. */
function RetentionField(props: {
  value: RetentionDraft
  onChange: (d: RetentionDraft) => void
  required?: boolean
  hint: string
}) {
  const hintId = useId()
  const { value, onChange } = props
  return (
    <fieldset className="fieldset">
      <legend>Retention{props.required ? '' : ' (optional)'}</legend>
      <div className="retention-input">
        <label className="field">
          <span>Keep closed runs for</span>
          <input
            type="number"
            inputMode="decimal"
            min="0"
            step="any"
            required={props.required}
            placeholder={props.required ? undefined : 'default'}
            aria-describedby={hintId}
            value={value.amount}
            onChange={(e) => onChange({ ...value, amount: e.target.value })}
          />
        </label>
        <label className="field">
          <span>Unit</span>
          <select value={value.unit} onChange={(e) => onChange({ ...value, unit: e.target.value as RetentionUnit })}>
            <option value="days">days</option>
            <option value="hours">hours</option>
          </select>
        </label>
      </div>
      <span id={hintId} className="small muted">
        {props.hint}
      </span>
    </fieldset>
  )
}
