import { identity, path, request } from './client'
import type { Schedule, ScheduleDescription, ScheduleList, OverlapPolicy } from './types'

/** A schedule of a namespace. */
export interface ScheduleRef {
  namespace: string
  scheduleId: string
}

function schedulePath({ namespace, scheduleId }: ScheduleRef, suffix = ''): string {
  return path`/namespaces/${namespace}/schedules/${scheduleId}` + suffix
}

/**
 * GET /namespaces/{ns}/schedules: a page of the namespace's schedules. The
 * list is read from the runs that carry them: it follows a change a moment
 * later than describe.
 */
export function listSchedules(namespace: string, pageToken?: string, signal?: AbortSignal): Promise<ScheduleList> {
  return request('GET', path`/namespaces/${namespace}/schedules`, { query: { page_token: pageToken }, signal })
}

/** GET .../schedules/{id}: a schedule, its next fire times and the actions it took. */
export function describeSchedule(ref: ScheduleRef, signal?: AbortSignal): Promise<ScheduleDescription> {
  return request('GET', schedulePath(ref), { signal })
}

/** POST /namespaces/{ns}/schedules: creates a schedule (already_exists when the id is taken). */
export function createSchedule(ref: ScheduleRef, schedule: Schedule): Promise<void> {
  return request('POST', path`/namespaces/${ref.namespace}/schedules`, {
    body: { schedule_id: ref.scheduleId, schedule, identity },
  })
}

/** PUT .../schedules/{id}: replaces the spec, action, policies and limit; the paused state stays. */
export function updateSchedule(ref: ScheduleRef, schedule: Schedule): Promise<void> {
  return request('PUT', schedulePath(ref), { body: { schedule, identity } })
}

/** POST .../pause: pauses (paused true) or unpauses the schedule, with a note. */
export function pauseSchedule(ref: ScheduleRef, paused: boolean, note: string): Promise<void> {
  return request('POST', schedulePath(ref, '/pause'), { body: { paused, note, identity } })
}

/** POST .../trigger: takes the schedule's action now, once; it answers once the run started. */
export function triggerSchedule(ref: ScheduleRef, overlap?: OverlapPolicy): Promise<void> {
  return request('POST', schedulePath(ref, '/trigger'), { body: { overlap, identity } })
}

/**
 * POST .../backfill: takes the action for every fire time at or after
 * start and before end, parallelism runs open at once (0 or 1: one after
 * another).
 */
export function backfillSchedule(
  ref: ScheduleRef,
  range: { start: string; end: string; parallelism: number },
): Promise<void> {
  return request('POST', schedulePath(ref, '/backfill'), { body: { ...range, identity } })
}

/** DELETE .../schedules/{id}: stops the schedule; the runs it started go on. */
export function deleteSchedule(ref: ScheduleRef): Promise<void> {
  return request('DELETE', schedulePath(ref), { query: { identity } })
}

/** The attribute that names the schedule a run was started by. */
export const scheduleAttribute = 'strand.schedule'
