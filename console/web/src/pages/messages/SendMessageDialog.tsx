import { useState } from 'react'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { FormField } from '../../components/FormField'
import { useSendMessage } from './queries'

/** Nanoseconds of an hour and a day, for the time-to-live choices. */
const hour = 3600e9

/** A dialog that sends a message by name and correlation key. */
export function SendMessageDialog({
  namespace,
  onClose,
  onSent,
}: {
  namespace: string
  onClose: () => void
  onSent: (messageId: string) => void
}) {
  const send = useSendMessage(namespace)
  const [name, setName] = useState('')
  const [key, setKey] = useState('')
  const [payload, setPayload] = useState('')
  const [ttlHours, setTtlHours] = useState('24')
  const [priority, setPriority] = useState('0')
  const [broadcast, setBroadcast] = useState(false)
  const [check, setCheck] = useState<{ field: string; message: string } | null>(null)

  const submit = () => {
    setCheck(null)
    if (!name.trim()) return setCheck({ field: 'name', message: 'Name the message.' })
    let body: unknown
    if (payload.trim()) {
      try {
        body = JSON.parse(payload)
      } catch {
        return setCheck({ field: 'payload', message: 'The payload is not JSON.' })
      }
    }
    const ttl = Number(ttlHours)
    if (!Number.isFinite(ttl) || ttl <= 0) return setCheck({ field: 'ttl', message: 'A positive number of hours.' })
    send.mutate(
      {
        name: name.trim(),
        correlation_key: key,
        payload: body,
        ttl: Math.round(ttl * hour),
        broadcast,
        priority: Number(priority),
      },
      {
        onSuccess: (r) => {
          onSent(r.message_id)
          onClose()
        },
      },
    )
  }
  const fieldError = (f: string) => (check?.field === f ? new Error(check.message) : undefined)

  return (
    <ConfirmDialog
      title="Send a message"
      description="A run waiting for this name and key gets it; if none waits, it is kept for its time to live, or starts a run under the name's rule."
      confirmLabel="Send"
      wide
      pending={send.isPending}
      error={send.error}
      onConfirm={submit}
      onClose={onClose}
    >
      <FormField label="Message name" error={fieldError('name')}>
        {(c) => <input {...c} value={name} onChange={(e) => setName(e.target.value)} autoFocus />}
      </FormField>
      <FormField label="Correlation key" hint="The conversation it belongs to: an order number, say.">
        {(c) => <input {...c} value={key} onChange={(e) => setKey(e.target.value)} />}
      </FormField>
      <FormField label="Payload (JSON)" error={fieldError('payload')}>
        {(c) => (
          <textarea {...c} rows={4} className="mono" value={payload} onChange={(e) => setPayload(e.target.value)} />
        )}
      </FormField>
      <FormField label="Kept for (hours)" hint="While no run waits for it." error={fieldError('ttl')}>
        {(c) => <input {...c} inputMode="decimal" value={ttlHours} onChange={(e) => setTtlHours(e.target.value)} />}
      </FormField>
      <FormField label="Priority">
        {(c) => (
          <select {...c} value={priority} onChange={(e) => setPriority(e.target.value)}>
            <option value="0">normal</option>
            <option value="1">1 (highest)</option>
            <option value="2">2</option>
            <option value="3">3</option>
            <option value="4">4</option>
            <option value="5">5 (lowest)</option>
          </select>
        )}
      </FormField>
      <label className="check">
        <input type="checkbox" checked={broadcast} onChange={(e) => setBroadcast(e.target.checked)} /> Broadcast: every
        run that waits within its time to live gets it
      </label>
    </ConfirmDialog>
  )
}
