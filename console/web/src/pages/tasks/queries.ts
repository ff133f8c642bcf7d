import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { actOnTask, describeTask, listTasks, type TaskAction, type TaskFilter } from '../../api/tasks'

/** How often the inbox and a task refresh while they are live. */
export const refreshMs = 2000

/** Query keys of tasks; an action invalidates tasksKeys.all(ns). */
export const tasksKeys = {
  all: (namespace: string) => ['tasks', namespace] as const,
  list: (namespace: string, f: TaskFilter) => [...tasksKeys.all(namespace), 'list', f.status ?? '', !!f.mine] as const,
  task: (namespace: string, taskId: string) => [...tasksKeys.all(namespace), 'task', taskId] as const,
}

/** The inbox, refreshed while live. */
export function useTasks(namespace: string, f: TaskFilter, live: boolean) {
  return useQuery({
    queryKey: tasksKeys.list(namespace, f),
    queryFn: ({ signal }) => listTasks(namespace, f, signal),
    refetchInterval: live ? refreshMs : false,
  })
}

/** One task, refreshed while it is open. */
export function useTask(namespace: string, taskId: string) {
  return useQuery({
    queryKey: tasksKeys.task(namespace, taskId),
    queryFn: ({ signal }) => describeTask(namespace, taskId, signal),
    refetchInterval: (q) => (q.state.data?.outcome ? false : refreshMs),
  })
}

/** Acts on a task; the answer is the task after the action. */
export function useActOnTask(namespace: string, taskId: string, user: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (a: TaskAction) => actOnTask(namespace, taskId, user, a),
    onSuccess: (t) => {
      qc.setQueryData(tasksKeys.task(namespace, taskId), t)
      return qc.invalidateQueries({ queryKey: tasksKeys.all(namespace) })
    },
  })
}
