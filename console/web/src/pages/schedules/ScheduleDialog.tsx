import { useState } from 'react'
import { ApiError } from '../../api/client'
import {
  catchupPolicies,
  overlapPolicies,
  type CatchupPolicy,
  type OverlapPolicy,
  type Payload,
  type Schedule,
} from '../../api/types'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { FormField } from '../../components/FormField'
import { useCreateSchedule, useUpdateSchedule } from './queries'
import { catchupLabels, formatGoDuration, overlapLabels, parseDuration } from './spec'

/** The fields of the schedule form, as typed. */
interface Draft {
  id: string
  cron: string
  timeZone: string
  workflowType: string
  queue: string
  input: string
  overlap: OverlapPolicy
  catchup: string
  catchupPolicy: CatchupPolicy
  limit: string
  paused: boolean
  note: string
}

type FieldKey = keyof Draft

/** The form's fields for a schedule read (an edit), or blank (a new one). */
function draftOf(id: string, s: Schedule | undefined): Draft {
  const input = s?.action.input
  return {
    id,
    cron: (s?.spec.cron ?? []).join('\n'),
    timeZone: s?.spec.time_zone ?? '',
    workflowType: s?.action.workflow_type ?? '',
    queue: s?.action.queue ?? '',
    input: input === undefined ? '' : JSON.stringify(input, null, 2),
    overlap: s?.policies?.overlap || 'skip',
    catchup: s?.policies?.catchup_window ? formatGoDuration(s.policies.catchup_window) : '',
    catchupPolicy: s?.policies?.catchup || 'latest',
    limit: s?.action_limit ? String(s.action_limit) : '',
    paused: s?.paused ?? false,
    note: s?.note ?? '',
  }
}

/**
 * The schedule the form describes, on top of base (what an edit read: the
 * fields the form does not show, such as the memo or the jitter, are kept),
 * or the errors of the fields that are not valid.
 */
function scheduleOf(d: Draft, base: Schedule | undefined): Schedule | Partial<Record<FieldKey, Error>> {
  const errors: Partial<Record<FieldKey, Error>> = {}
  const cron = d.cron
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
  if (cron.length === 0) errors.cron = new Error('Enter at least one cron expression.')
  let input: Payload
  if (d.input.trim() !== '') {
    try {
      input = JSON.parse(d.input) as Payload
    } catch (e) {
      errors.input = new Error(`Not valid JSON: ${(e as Error).message}`)
    }
  }
  const catchup = parseDuration(d.catchup)
  if (catchup instanceof Error) errors.catchup = catchup
  let limit: number | undefined
  if (d.limit.trim() !== '') {
    limit = Number(d.limit)
    if (!Number.isInteger(limit) || limit < 0) errors.limit = new Error('Enter a whole number of fires, or nothing.')
  }
  if (Object.keys(errors).length > 0) return errors
  const s: Schedule = {
    ...base,
    spec: { ...base?.spec, cron, time_zone: d.timeZone.trim() || undefined },
    action: {
      ...base?.action,
      workflow_type: d.workflowType.trim(),
      queue: d.queue.trim() || undefined,
      input,
    },
    policies: {
      ...base?.policies,
      overlap: d.overlap,
      catchup_window: catchup instanceof Error ? undefined : catchup,
      // The default is sent as none, as a schedule that never named one.
      catchup: d.catchupPolicy === 'latest' ? undefined : d.catchupPolicy,
    },
    action_limit: limit,
  }
  if (!base) {
    s.paused = d.paused
    s.note = d.paused ? d.note.trim() : undefined
  }
  return s
}

/** The form field an API refusal names (its field is schedule.spec.cron[0], say). */
function fieldOf(error: unknown): FieldKey | undefined {
  if (!(error instanceof ApiError) || !error.body.field) return undefined
  const f = error.body.field
  const fields: [string, FieldKey][] = [
    ['schedule_id', 'id'],
    ['schedule.spec.cron', 'cron'],
    ['schedule.spec.time_zone', 'timeZone'],
    ['schedule.action.workflow_type', 'workflowType'],
    ['schedule.action.queue', 'queue'],
    ['schedule.action.input', 'input'],
    ['schedule.policies.overlap', 'overlap'],
    ['schedule.policies.catchup_window', 'catchup'],
    ['schedule.policies.catchup', 'catchupPolicy'],
    ['schedule.action_limit', 'limit'],
    ['schedule.note', 'note'],
  ]
  return fields.find(([prefix]) => f === prefix || f.startsWith(prefix + '[') || f.startsWith(prefix + '.'))?.[1]
}

interface ScheduleDialogProps {
  namespace: string
  /** The schedule to edit, as read; none for a new one. */
  edit?: { scheduleId: string; schedule: Schedule }
  onClose: () => void
  /** Called with the schedule's id once it is saved. */
  onSaved: (scheduleId: string) => void
}

/**
 * Creates a schedule, or edits one: its calendars, the workflow it starts
 * and its policies. An edit replaces what the form shows and keeps the
 * rest (memo, attributes, jitter, bounds) and the paused state. A refusal
 * of the API that names a field shows under that field.
 */
export function ScheduleDialog({ namespace, edit, onClose, onSaved }: ScheduleDialogProps) {
  const [draft, setDraft] = useState(() => draftOf(edit?.scheduleId ?? '', edit?.schedule))
  const [invalid, setInvalid] = useState<Partial<Record<FieldKey, Error>>>({})
  const create = useCreateSchedule(namespace)
  const update = useUpdateSchedule({ namespace, scheduleId: edit?.scheduleId ?? '' })
  const m = edit ? update : create
  const apiField = fieldOf(m.error)
  const errorOf = (k: FieldKey) => invalid[k] ?? (apiField === k ? m.error : undefined)
  const set =
    <K extends FieldKey>(k: K) =>
    (v: Draft[K]) =>
      setDraft((d) => ({ ...d, [k]: v }))
  const text = (k: FieldKey) => (e: { target: { value: string } }) => set(k)(e.target.value)

  const save = () => {
    const s = scheduleOf(draft, edit?.schedule)
    if (!('spec' in s)) {
      setInvalid(s)
      return
    }
    setInvalid({})
    const done = () => {
      onSaved(draft.id.trim())
      onClose()
    }
    if (edit) update.mutate(s, { onSuccess: done })
    else create.mutate({ scheduleId: draft.id.trim(), schedule: s }, { onSuccess: done })
  }

  return (
    <ConfirmDialog
      title={edit ? `Edit schedule ${edit.scheduleId}` : 'New schedule'}
      description={
        edit
          ? 'Replaces the calendars, the workflow and the policies; the schedule stays paused or active as it is.'
          : 'A schedule starts a run of a workflow at each time its calendars name.'
      }
      confirmLabel={edit ? 'Save changes' : 'Create schedule'}
      wide
      pending={m.isPending}
      error={apiField ? undefined : m.error}
      onClose={onClose}
      onConfirm={save}
    >
      <div className="form-row">
        <FormField label="Schedule ID" error={errorOf('id')}>
          {(p) => (
            <input
              {...p}
              type="text"
              required
              autoFocus={!edit}
              readOnly={!!edit}
              maxLength={200}
              value={draft.id}
              onChange={text('id')}
              spellCheck={false}
              autoComplete="off"
            />
          )}
        </FormField>
        <FormField label="Workflow type" error={errorOf('workflowType')}>
          {(p) => (
            <input
              {...p}
              type="text"
              required
              value={draft.workflowType}
              onChange={text('workflowType')}
              spellCheck={false}
            />
          )}
        </FormField>
      </div>
      <FormField
        label="Cron expressions"
        error={errorOf('cron')}
        hint={
          <>
            One per line: 5 fields (minute hour day month weekday), 6 with seconds first, <code>@daily</code> or{' '}
            <code>@every 90s</code>.
          </>
        }
      >
        {(p) => (
          <textarea
            {...p}
            rows={3}
            className="mono"
            required
            autoFocus={!!edit}
            value={draft.cron}
            onChange={text('cron')}
            placeholder="0 2 * * *"
            spellCheck={false}
          />
        )}
      </FormField>
      <div className="form-row">
        <FormField label="Time zone" error={errorOf('timeZone')} hint="An IANA name; UTC when blank.">
          {(p) => (
            <input
              {...p}
              type="text"
              value={draft.timeZone}
              onChange={text('timeZone')}
              placeholder="UTC"
              spellCheck={false}
            />
          )}
        </FormField>
        <FormField label="Queue" error={errorOf('queue')}>
          {(p) => (
            <input
              {...p}
              type="text"
              value={draft.queue}
              onChange={text('queue')}
              placeholder="default"
              spellCheck={false}
            />
          )}
        </FormField>
      </div>
      <FormField label="Input (JSON, optional)" error={errorOf('input')}>
        {(p) => (
          <textarea
            {...p}
            rows={2}
            className="mono"
            value={draft.input}
            onChange={text('input')}
            placeholder='{"report": "daily"}'
            spellCheck={false}
          />
        )}
      </FormField>
      <div className="form-row">
        <FormField label="While a run is open" error={errorOf('overlap')}>
          {(p) => (
            <select {...p} value={draft.overlap} onChange={(e) => set('overlap')(e.target.value as OverlapPolicy)}>
              {overlapPolicies.map((o) => (
                <option key={o} value={o}>
                  {overlapLabels[o]}
                </option>
              ))}
            </select>
          )}
        </FormField>
        <FormField
          label="Catch-up window"
          error={errorOf('catchup')}
          hint="How late a missed fire is still taken; 1h when blank."
        >
          {(p) => (
            <input
              {...p}
              type="text"
              value={draft.catchup}
              onChange={text('catchup')}
              placeholder="1h"
              spellCheck={false}
            />
          )}
        </FormField>
      </div>
      <div className="form-row">
        <FormField
          label="After downtime"
          error={errorOf('catchupPolicy')}
          hint="Fires that came while Strand was down; those not run count as missed."
        >
          {(p) => (
            <select
              {...p}
              value={draft.catchupPolicy}
              onChange={(e) => set('catchupPolicy')(e.target.value as CatchupPolicy)}
            >
              {catchupPolicies.map((o) => (
                <option key={o} value={o}>
                  {catchupLabels[o]}
                </option>
              ))}
            </select>
          )}
        </FormField>
      </div>
      <div className="form-row">
        <FormField label="Action limit" error={errorOf('limit')} hint="Fires to take in all; no limit when blank.">
          {(p) => (
            <input
              {...p}
              type="number"
              min={0}
              step={1}
              value={draft.limit}
              onChange={text('limit')}
              placeholder="none"
            />
          )}
        </FormField>
        {!edit && (
          <div className="paused-fields">
            <label className="check">
              <input type="checkbox" checked={draft.paused} onChange={(e) => set('paused')(e.target.checked)} />
              <span>Start paused</span>
            </label>
            {draft.paused && (
              <FormField label="Note (optional)" error={errorOf('note')}>
                {(p) => (
                  <input {...p} type="text" value={draft.note} onChange={text('note')} placeholder="why it is paused" />
                )}
              </FormField>
            )}
          </div>
        )}
      </div>
    </ConfirmDialog>
  )
}
