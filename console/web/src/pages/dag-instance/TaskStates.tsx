import type { DagTask, DagTaskInstance } from '../../api/dags'
import { DagStateBadge } from '../../components/DagStateBadge'
import { Time } from '../../components/Time'
import { formatDuration, parseTime } from '../../components/timeFormat'

/** The tasks and their states as a table: the graph's text alternative; a task's name opens its panel. */
export function TaskStates(props: {
  tasks: DagTask[]
  states: Map<string, DagTaskInstance>
  selected: string | undefined
  onSelect: (task: string) => void
}) {
  const { tasks, states, selected, onSelect } = props
  return (
    <details className="bars-table">
      <summary>The tasks as a table</summary>
      <div className="table-wrap">
        <table className="table compact task-states">
          <thead>
            <tr>
              <th scope="col">Task</th>
              <th scope="col">Type</th>
              <th scope="col">State</th>
              <th scope="col" className="num">
                Attempt
              </th>
              <th scope="col">Started</th>
              <th scope="col" className="num">
                Took
              </th>
              <th scope="col">Host</th>
            </tr>
          </thead>
          <tbody>
            {tasks.map((t) => {
              const i = states.get(t.name)
              const start = parseTime(i?.start_time)
              const end = parseTime(i?.end_time)
              return (
                <tr key={t.name} data-task={t.name} data-state={i?.state ?? ''}>
                  <td>
                    <button
                      type="button"
                      className="link mono"
                      aria-pressed={selected === t.name}
                      onClick={() => onSelect(t.name)}
                    >
                      {t.name}
                    </button>
                  </td>
                  <td>{t.type}</td>
                  <td>
                    <DagStateBadge state={i?.state} />
                  </td>
                  <td className="num">{i?.attempt || '—'}</td>
                  <td>
                    <Time value={i?.start_time} />
                  </td>
                  <td className="num">{start && end ? formatDuration(end.getTime() - start.getTime()) : '—'}</td>
                  <td>
                    {i?.host ||
                      (i?.state === 'submitted' && (i.worker_group || i.queue) ? (
                        <span className="muted">
                          waiting for a worker of {i.worker_group ? 'group' : 'queue'}{' '}
                          <span className="mono">{i.worker_group || i.queue}</span>
                        </span>
                      ) : (
                        <span className="muted">—</span>
                      ))}
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      </div>
    </details>
  )
}
