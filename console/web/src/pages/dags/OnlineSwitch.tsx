import { ErrorMessage } from '../../components/ErrorMessage'
import { useRelease } from './queries'

/**
 * A DAG's release as a switch: online (it may be started and scheduled) or
 * offline. Flipping it puts the DAG online or takes it offline at once;
 * readOnly shows it to one who may not (not an operator of any namespace).
 */
export function OnlineSwitch({ name, online, readOnly }: { name: string; online: boolean; readOnly?: boolean }) {
  const release = useRelease(name)
  return (
    <div className="online-switch">
      <button
        type="button"
        role="switch"
        aria-checked={online}
        aria-label={`${name} online`}
        className={online ? 'switch on' : 'switch'}
        disabled={readOnly || release.isPending}
        title={readOnly ? 'Putting a DAG online or offline needs the operator role' : undefined}
        onClick={() => release.mutate({ online: !online })}
      >
        <span className="switch-track" aria-hidden="true">
          <span className="switch-thumb" />
        </span>
        <span className="switch-label">{online ? 'Online' : 'Offline'}</span>
      </button>
      <ErrorMessage error={release.error} />
    </div>
  )
}
