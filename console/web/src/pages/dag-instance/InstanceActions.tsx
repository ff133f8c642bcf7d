import { useState } from 'react'
import type { DagInstanceDescription, DagInstanceRef, DagState } from '../../api/dags'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { ErrorMessage } from '../../components/ErrorMessage'
import { useCommand, useRerun } from './queries'

const pausable: DagState[] = ['running', 'submitted', 'waiting_thread', 'waiting_dependency']
const resumable: DagState[] = ['paused', 'ready_pause']
const failed: DagState[] = ['failure', 'stop', 'kill']

/**
 * The commands of an instance, each enabled by its state: Pause while it
 * runs, Resume while it is paused (or pausing), Stop until it ended (after
 * a confirmation), and once its run closed Rerun (all of it again) and
 * Rerun from failed (its succeeded tasks keep their outcome).
 */
export function InstanceActions({
  instanceRef,
  description,
}: {
  instanceRef: DagInstanceRef
  description: DagInstanceDescription
}) {
  const command = useCommand(instanceRef)
  const rerun = useRerun(instanceRef)
  const [confirm, setConfirm] = useState<'stop' | 'rerun' | 'rerun-failed' | null>(null)
  const [done, setDone] = useState('')
  const state = description.instance?.state
  const open = description.run.status === 'running'
  const act = (action: 'pause' | 'resume' | 'stop') =>
    command.mutate(action, {
      onSuccess: () => {
        setConfirm(null)
        setDone(
          action === 'pause'
            ? 'Pause sent: running tasks finish, no new one starts.'
            : action === 'resume'
              ? 'Resumed.'
              : 'Stop sent: running tasks are killed.',
        )
      },
    })
  const again = (failedOnly: boolean) =>
    rerun.mutate(failedOnly, {
      onSuccess: (s) => {
        setConfirm(null)
        setDone(`Rerun started: run ${s.run_id}.`)
      },
    })
  return (
    <div className="instance-actions">
      <div className="actions" role="group" aria-label="Commands">
        <button
          type="button"
          onClick={() => act('pause')}
          disabled={!open || !state || !pausable.includes(state) || command.isPending}
        >
          Pause
        </button>
        <button
          type="button"
          onClick={() => act('resume')}
          disabled={!open || !state || !resumable.includes(state) || command.isPending}
        >
          Resume
        </button>
        <button
          type="button"
          className="danger"
          onClick={() => setConfirm('stop')}
          disabled={!open || state === 'ready_stop' || command.isPending}
        >
          Stop…
        </button>
        <button type="button" onClick={() => setConfirm('rerun')} disabled={open}>
          Rerun…
        </button>
        <button
          type="button"
          onClick={() => setConfirm('rerun-failed')}
          disabled={open || !state || !failed.includes(state)}
        >
          Rerun from failed…
        </button>
      </div>
      <span role="status" className="small muted">
        {done}
      </span>
      {confirm === null && <ErrorMessage error={command.error} title="The command failed" />}
      {confirm === 'stop' && (
        <ConfirmDialog
          title="Stop the instance"
          description={
            <>
              The running tasks of <strong>{instanceRef.workflowId}</strong> are killed (a shell task's whole process
              group) and no new task starts. The instance ends stopped.
            </>
          }
          confirmLabel="Stop instance"
          danger
          pending={command.isPending}
          error={command.error}
          onConfirm={() => act('stop')}
          onClose={() => setConfirm(null)}
        />
      )}
      {(confirm === 'rerun' || confirm === 'rerun-failed') && (
        <ConfirmDialog
          title={confirm === 'rerun' ? 'Rerun the instance' : 'Rerun from the failed tasks'}
          description={
            confirm === 'rerun'
              ? 'A new run of the instance starts at the same version, parameters and business time: every task runs again.'
              : 'A new run of the instance starts at the same version, parameters and business time: the tasks that succeeded keep their outcome and outputs, the others run again.'
          }
          confirmLabel={confirm === 'rerun' ? 'Rerun' : 'Rerun from failed'}
          pending={rerun.isPending}
          error={rerun.error}
          onConfirm={() => again(confirm === 'rerun-failed')}
          onClose={() => setConfirm(null)}
        />
      )}
    </div>
  )
}
