// What an audit entry's route did, in words: "POST
// /namespaces/{namespace}/workflows/{workflow_id}/signals" reads "Signal
// run", and the entry's target follows it.

import type { AuditEntry } from '../../api/audit'

/** The words of each route the audit log records (method and path as the API names them). */
const words: Record<string, string> = {
  'POST /namespaces/{namespace}/workflows': 'Start run',
  'POST /namespaces/{namespace}/workflows/{workflow_id}/signals': 'Signal run',
  'POST /namespaces/{namespace}/workflows/{workflow_id}/signal-with-start': 'Signal (or start) run',
  'POST /namespaces/{namespace}/workflows/{workflow_id}/queries': 'Query run',
  'POST /namespaces/{namespace}/workflows/{workflow_id}/cancel': 'Cancel run',
  'POST /namespaces/{namespace}/workflows/{workflow_id}/terminate': 'Terminate run',
  'POST /namespaces/{namespace}/workflows/{workflow_id}/pause': 'Pause run',
  'POST /namespaces/{namespace}/workflows/{workflow_id}/resume': 'Resume run',
  'POST /namespaces/{namespace}/workflows/{workflow_id}/reset': 'Reset run',
  'POST /namespaces/{namespace}/workflows/{workflow_id}/rerun': 'Start again run',
  'POST /namespaces/{namespace}/workflow-search': 'Search runs',
  'POST /namespaces/{namespace}/workflow-count': 'Count runs',
  'POST /namespaces/{namespace}/schedules': 'Create schedule',
  'PUT /namespaces/{namespace}/schedules/{schedule_id}': 'Change schedule',
  'DELETE /namespaces/{namespace}/schedules/{schedule_id}': 'Delete schedule',
  'POST /namespaces/{namespace}/schedules/{schedule_id}/trigger': 'Trigger schedule',
  'POST /namespaces/{namespace}/schedules/{schedule_id}/backfill': 'Backfill schedule',
  'POST /namespaces/{namespace}/batches': 'Start batch',
  'POST /namespaces/{namespace}/batches/{batch_id}/stop': 'Stop batch',
  'POST /namespaces/{namespace}/saga-batches': 'Start saga batch',
  'POST /namespaces/{namespace}/messages': 'Send message',
  'PUT /namespaces/{namespace}/message-rules/{message}': 'Set the rule of message',
  'DELETE /namespaces/{namespace}/message-rules/{message}': 'Delete the rule of message',
  'POST /namespaces/{namespace}/sagas/{id}/disable': 'Disable saga',
  'POST /namespaces/{namespace}/sagas/{id}/enable': 'Enable saga',
  'POST /namespaces/{namespace}/sagas/{id}/resolve': 'Decide saga',
  'POST /namespaces/{namespace}/sagas/{id}/terminate': 'Terminate saga',
  'POST /namespaces/{namespace}/statemachine-instances': 'Create state machine instance',
  'PUT /namespaces/{namespace}/statemachine-instances/{id}': 'Update state machine instance',
  'POST /namespaces/{namespace}/statemachine-instances/{id}/signal': 'Signal state machine instance',
  'POST /namespaces/{namespace}/statemachine-instances/{id}/wakeup': 'Wake up state machine instance',
  'POST /definitions': 'Register definition',
  'POST /dags': 'Save DAG',
  'POST /dag-check': 'Check DAG text',
  'POST /dags/{name}/release': 'Release DAG',
  'POST /namespaces/{namespace}/dags/{name}/instances': 'Run DAG',
  'POST /namespaces/{namespace}/dag-instances/{workflow_id}/command': 'Command DAG instance',
  'POST /namespaces/{namespace}/dag-instances/{workflow_id}/rerun': 'Rerun DAG instance',
  'POST /namespaces': 'Create namespace',
  'PUT /namespaces/{namespace}': 'Change namespace',
  'PUT /namespaces/{namespace}/quotas': 'Set the quotas of namespace',
  'PUT /namespaces/{namespace}/grants/{user}': 'Grant a role in the namespace to',
  'POST /users': 'Create user',
  'PUT /users/{user}': 'Change user',
  'DELETE /users/{user}': 'Delete user',
  'POST /tokens': 'Create a token for',
  'DELETE /tokens/{id}': 'Revoke token',
  'POST /login': 'Log in as',
  'POST /logout': 'Log out',
}

/** The request's body as the entry's detail keeps it (undefined when it kept none, or only its size). */
function body(e: AuditEntry): Record<string, unknown> | undefined {
  const d = e.detail
  if (!d || typeof d !== 'object') return undefined
  const b = (d as { body?: unknown }).body
  return b && typeof b === 'object' && !Array.isArray(b) ? (b as Record<string, unknown>) : undefined
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined
}

/** The verbs of a task's actions. */
const taskVerbs: Record<string, string> = {
  claim: 'Claim',
  release: 'Release',
  delegate: 'Delegate',
  comment: 'Comment on',
  complete: 'Complete',
}

/**
 * An entry's action in words ("Signal run"), and what it acted on ("order-1"):
 * the path's target, or what the request's body named when the path named
 * none (a schedule's id, a message's name). A route the console does not
 * know keeps its method and path.
 */
export function actionWords(e: AuditEntry): { words: string; target: string | undefined; known: boolean } {
  const b = body(e)
  let target = e.target || str(b?.schedule_id) || str(b?.batch_id)
  let w = words[e.action]
  switch (e.action) {
    case 'POST /namespaces/{namespace}/schedules/{schedule_id}/pause':
      w = b?.paused === false ? 'Unpause schedule' : 'Pause schedule'
      break
    case 'POST /namespaces/{namespace}/tasks/{task_id}/actions': {
      const verb = taskVerbs[str(b?.action) ?? '']
      w = verb ? `${verb} task` : 'Act on task'
      break
    }
    case 'POST /namespaces/{namespace}/messages': {
      const key = str(b?.correlation_key)
      if (key && target) target = `${target} (key ${key})`
      break
    }
    case 'POST /namespaces/{namespace}/dag-instances/{workflow_id}/command': {
      const c = str(b?.command) ?? str(b?.action)
      if (c) w = `${c.charAt(0).toUpperCase()}${c.slice(1)} DAG instance`
      break
    }
  }
  if (!w) return { words: e.action, target, known: false }
  return { words: w, target, known: true }
}
