import { useState, type FormEvent } from 'react'
import type { SagaBatchAction } from '../../api/sagas'
import type { BatchRef } from '../../api/types'
import { ErrorMessage } from '../../components/ErrorMessage'
import { FormField } from '../../components/FormField'
import { BatchNotice } from '../runs/BatchNotice'
import { useStartSagaBatch } from './queries'
import { describeSagaSearch, toSagaFilter, type SagasSearch } from './search'

/** Each action as the select offers it, and what it does to each saga. */
const actions: Record<SagaBatchAction, { label: string; verb: string; hint: string }> = {
  retry: {
    label: 'Retry the failed compensations',
    verb: 'Retry',
    hint: 'Each saga in compensation failed runs its failed compensations again.',
  },
  done: {
    label: 'Mark the failed compensations done',
    verb: 'Mark done',
    hint: 'Each saga in compensation failed records its failed compensations as undone by hand, and goes on compensating.',
  },
  skip: {
    label: 'Skip the failed compensations',
    verb: 'Skip',
    hint: 'Each saga in compensation failed leaves its failed compensations as they are, and goes on compensating.',
  },
  terminate: {
    label: 'Terminate the sagas',
    verb: 'Terminate',
    hint: 'Each saga ends where it is, without compensating. This cannot be undone.',
  },
}

/**
 * A batch over every saga the page's filter selects (not only the page
 * shown): an operator's decision on their failed compensations, or their
 * termination, as a job on the server. The API's refusal shows here.
 */
export function BatchForm({ namespace, search }: { namespace: string; search: SagasSearch }) {
  const [action, setAction] = useState<SagaBatchAction>('retry')
  const [note, setNote] = useState('')
  const [started, setStarted] = useState<BatchRef | null>(null)
  const start = useStartSagaBatch(namespace)
  const where = describeSagaSearch(search)
  const submit = (e: FormEvent) => {
    e.preventDefault()
    start.mutate(
      { ...toSagaFilter(search), action, note: note.trim() || undefined },
      {
        onSuccess: (ref) => {
          setStarted(ref)
          setNote('')
        },
      },
    )
  }
  return (
    <section className="card saga-batch" aria-labelledby="saga-batch-title">
      <div className="card-header">
        <h2 id="saga-batch-title">Batch</h2>
        <span className="muted">
          acts on every saga {where ? <>the filter selects ({where})</> : 'of the namespace'}, on every page
        </span>
      </div>
      <form onSubmit={submit} aria-labelledby="saga-batch-title">
        <div className="form-row">
          <FormField label="Action" hint={actions[action].hint}>
            {(p) => (
              <select {...p} value={action} onChange={(e) => setAction(e.target.value as SagaBatchAction)}>
                {(Object.keys(actions) as SagaBatchAction[]).map((a) => (
                  <option key={a} value={a}>
                    {actions[a].label}
                  </option>
                ))}
              </select>
            )}
          </FormField>
          <FormField label="Note" hint="Recorded with each saga's decision, or as the reason of its termination.">
            {(p) => <input {...p} type="text" value={note} onChange={(e) => setNote(e.target.value)} />}
          </FormField>
        </div>
        <ErrorMessage error={start.error} title="Starting the batch failed" />
        <div className="actions">
          <button type="submit" className={action === 'terminate' ? 'danger' : 'primary'} disabled={start.isPending}>
            {start.isPending ? 'Starting…' : `${actions[action].verb} the sagas`}
          </button>
        </div>
      </form>
      {started && (
        <BatchNotice key={started.batch_id} batch={started} expected={undefined} onDismiss={() => setStarted(null)} />
      )}
    </section>
  )
}
