import { useNavigate } from '@tanstack/react-router'
import { useState } from 'react'
import type { ScheduleRef } from '../../api/schedules'
import type { ScheduleDescription } from '../../api/types'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { FormField } from '../../components/FormField'
import { formatTime, fromLocalInput, toLocalInput } from '../../components/timeFormat'
import { ScheduleDialog } from '../schedules/ScheduleDialog'
import { useBackfillSchedule, useDeleteSchedule, usePauseSchedule, useTriggerSchedule } from './queries'

type Action = 'pause' | 'backfill' | 'edit' | 'delete'

/** What the last action did, for the page to say: a line of text, or the refusal. */
export type ActionStatus = { message: string } | { error: unknown }

/**
 * The buttons that act on a schedule: pause or unpause, trigger, backfill,
 * edit and delete. Trigger acts at once; the others open a dialog. What an
 * action did, or the trigger's refusal, goes to onStatus.
 */
export function ScheduleActions({
  schedule: d,
  onStatus,
}: {
  schedule: ScheduleDescription
  onStatus: (status: ActionStatus) => void
}) {
  const ref: ScheduleRef = { namespace: d.namespace, scheduleId: d.schedule_id }
  const [open, setOpen] = useState<Action | null>(null)
  const trigger = useTriggerSchedule(ref)
  const close = () => setOpen(null)
  const paused = d.schedule.paused ?? false
  return (
    <div className="actions" role="group" aria-label="Actions">
      <button type="button" onClick={() => setOpen('pause')}>
        {paused ? 'Unpause…' : 'Pause…'}
      </button>
      <button
        type="button"
        disabled={trigger.isPending}
        onClick={() =>
          trigger.mutate(undefined, {
            onSuccess: () =>
              onStatus({ message: `Triggered at ${formatTime(new Date()).slice(11)}: the run started.` }),
            onError: (error) => onStatus({ error }),
          })
        }
      >
        {trigger.isPending ? 'Triggering…' : 'Trigger now'}
      </button>
      <button type="button" onClick={() => setOpen('backfill')}>
        Backfill…
      </button>
      <button type="button" onClick={() => setOpen('edit')}>
        Edit…
      </button>
      <button type="button" className="danger" onClick={() => setOpen('delete')}>
        Delete…
      </button>
      {open === 'pause' && (
        <PauseDialog
          scheduleRef={ref}
          paused={paused}
          onClose={close}
          onDone={() => onStatus({ message: paused ? 'Unpaused.' : 'Paused.' })}
        />
      )}
      {open === 'backfill' && (
        <BackfillDialog scheduleRef={ref} onClose={close} onDone={() => onStatus({ message: 'Backfill started.' })} />
      )}
      {open === 'edit' && (
        <ScheduleDialog
          namespace={d.namespace}
          edit={{ scheduleId: d.schedule_id, schedule: d.schedule }}
          onClose={close}
          onSaved={() => onStatus({ message: 'Changes saved.' })}
        />
      )}
      {open === 'delete' && <DeleteDialog scheduleRef={ref} onClose={close} />}
    </div>
  )
}

interface DialogProps {
  scheduleRef: ScheduleRef
  onClose: () => void
  /** Called once the action succeeded. */
  onDone?: () => void
}

/** Pauses an active schedule or unpauses a paused one, with a note saying why. */
function PauseDialog({ scheduleRef: ref, paused, onClose, onDone }: DialogProps & { paused: boolean }) {
  const [note, setNote] = useState('')
  const pause = usePauseSchedule(ref)
  return (
    <ConfirmDialog
      title={paused ? 'Unpause the schedule' : 'Pause the schedule'}
      description={
        paused ? (
          <>
            <strong>{ref.scheduleId}</strong> fires again at its next fire time; the fires that came while it was paused
            are not taken.
          </>
        ) : (
          <>
            <strong>{ref.scheduleId}</strong> takes no fire until it is unpaused. Runs it started go on; trigger and
            backfill still act.
          </>
        )
      }
      confirmLabel={paused ? 'Unpause schedule' : 'Pause schedule'}
      pending={pause.isPending}
      error={pause.error}
      onClose={onClose}
      onConfirm={() =>
        pause.mutate(
          { paused: !paused, note: note.trim() },
          {
            onSuccess: () => {
              onDone?.()
              onClose()
            },
          },
        )
      }
    >
      <FormField label="Note (optional)" hint="Shown with the schedule's state.">
        {(p) => <input {...p} type="text" autoFocus value={note} onChange={(e) => setNote(e.target.value)} />}
      </FormField>
    </ConfirmDialog>
  )
}

/** A day ago, and now, to the minute: the range a backfill dialog opens with. */
function lastDay(): { start: string; end: string } {
  const end = new Date()
  end.setSeconds(0, 0)
  const start = new Date(end.getTime() - 86_400_000)
  return { start: toLocalInput(start.toISOString()), end: toLocalInput(end.toISOString()) }
}

/**
 * Takes the schedule's action for every fire time of a past range, as if
 * it had fired then. The times are the browser's local time.
 */
function BackfillDialog({ scheduleRef: ref, onClose, onDone }: DialogProps) {
  const [range, setRange] = useState(lastDay)
  const [parallelism, setParallelism] = useState('1')
  const [invalid, setInvalid] = useState<Error | null>(null)
  const backfill = useBackfillSchedule(ref)
  return (
    <ConfirmDialog
      title="Backfill"
      description={
        <>
          <strong>{ref.scheduleId}</strong> starts a run for every fire time at or after the start and before the end,
          each as if it had fired then.
        </>
      }
      confirmLabel="Start backfill"
      pending={backfill.isPending}
      error={invalid ?? backfill.error}
      onClose={onClose}
      onConfirm={() => {
        const start = fromLocalInput(range.start)
        const end = fromLocalInput(range.end)
        const bad = !start || !end ? 'Enter a start and an end.' : start >= end ? 'The end comes after the start.' : ''
        setInvalid(bad ? new Error(bad) : null)
        if (bad) return
        const done = () => {
          onDone?.()
          onClose()
        }
        backfill.mutate({ start, end, parallelism: Number(parallelism) || 0 }, { onSuccess: done })
      }}
    >
      <div className="form-row">
        <FormField label="Start">
          {(p) => (
            <input
              {...p}
              type="datetime-local"
              required
              autoFocus
              value={range.start}
              onChange={(e) => setRange({ ...range, start: e.target.value })}
            />
          )}
        </FormField>
        <FormField label="End">
          {(p) => (
            <input
              {...p}
              type="datetime-local"
              required
              value={range.end}
              onChange={(e) => setRange({ ...range, end: e.target.value })}
            />
          )}
        </FormField>
      </div>
      <FormField label="Parallelism" hint="How many of its runs are open at once; 1 runs them one after another.">
        {(p) => (
          <input
            {...p}
            type="number"
            min={1}
            max={1000}
            step={1}
            value={parallelism}
            onChange={(e) => setParallelism(e.target.value)}
          />
        )}
      </FormField>
    </ConfirmDialog>
  )
}

/** Deletes the schedule, then opens the list. */
function DeleteDialog({ scheduleRef: ref, onClose }: DialogProps) {
  const navigate = useNavigate()
  const del = useDeleteSchedule(ref, () =>
    navigate({ to: '/namespaces/$namespace/schedules', params: { namespace: ref.namespace } }),
  )
  return (
    <ConfirmDialog
      title="Delete the schedule"
      description={
        <>
          <strong>{ref.scheduleId}</strong> takes no more actions. The runs it started go on. This cannot be undone.
        </>
      }
      confirmLabel="Delete schedule"
      danger
      pending={del.isPending}
      error={del.error}
      onClose={onClose}
      onConfirm={() =>
        del.mutate(undefined, { onSuccess: onClose })
      }
    />
  )
}
