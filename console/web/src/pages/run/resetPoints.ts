import type { ResetPoint } from '../../api/types'

/** The reset points as the dialogs offer them. */
export const resetPointLabels: Record<ResetPoint, string> = {
  last_workflow_task: 'The last workflow task',
  first_failed_step: 'Before the first failed step',
  before_event: 'Before an event of the history',
}
