import { identity, path, request } from './client'

export interface TaskCandidates {
  users?: string[]
  groups?: string[]
}

/** A task as the inbox lists it (api.TaskSummary). */
export interface TaskSummary {
  task_id: string
  title: string
  status: string
  assignee?: string
  candidates: TaskCandidates
  priority?: number
  created: string
  due_at?: string
  parent_workflow_type?: string
  parent: { namespace?: string; workflow_id: string; run_id?: string }
}

/** A task now (api.HumanTask). */
export interface HumanTask {
  task_id: string
  namespace: string
  options: {
    title: string
    description?: string
    assignees?: string[]
    groups?: string[]
    form?: Record<string, unknown>
    data?: unknown
    outcomes?: string[]
    priority?: number
  }
  status: string
  assignee?: string
  candidates: TaskCandidates
  created: string
  due_at?: string
  escalated?: number
  parent: { namespace?: string; workflow_id: string; run_id?: string }
  parent_workflow_type?: string
  comments?: { by: string; at: string; text: string }[]
  actions?: { kind: string; by: string; at: string; to?: string }[]
  outcome?: { outcome: string; data?: unknown; by?: string; at: string }
}

/** An action on a task (api.TaskActionRequest). */
export interface TaskAction {
  action: 'claim' | 'release' | 'delegate' | 'comment' | 'complete'
  to?: string
  text?: string
  outcome?: string
  data?: unknown
}

export interface TaskFilter {
  status?: string
  mine?: boolean
}

/** GET /namespaces/{ns}/tasks: the caller's tasks (all of them, for the namespace's admins). */
export function listTasks(namespace: string, f: TaskFilter, signal?: AbortSignal): Promise<{ tasks: TaskSummary[] }> {
  return request('GET', path`/namespaces/${namespace}/tasks`, {
    query: { status: f.status, mine: f.mine ? 'true' : undefined },
    signal,
  })
}

/** GET /namespaces/{ns}/tasks/{id}. */
export function describeTask(namespace: string, taskId: string, signal?: AbortSignal): Promise<HumanTask> {
  return request('GET', path`/namespaces/${namespace}/tasks/${taskId}`, { signal })
}

/**
 * POST /namespaces/{ns}/tasks/{id}/actions, as user: a server with access
 * control goes by the login instead.
 */
export function actOnTask(namespace: string, taskId: string, user: string, a: TaskAction): Promise<HumanTask> {
  return request('POST', path`/namespaces/${namespace}/tasks/${taskId}/actions`, {
    body: { ...a, user: user || identity },
  })
}
