import { useIsMutating, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  backfillSchedule,
  deleteSchedule,
  describeSchedule,
  pauseSchedule,
  triggerSchedule,
  type ScheduleRef,
} from '../../api/schedules'
import { runsKeys } from '../runs/queries'
import { refreshMs, schedulesKeys, useInvalidateSchedules } from '../schedules/queries'

/** The key of a schedule's delete: while it runs, the description is not read again. */
const deleteKey = (ref: ScheduleRef) => ['schedule-delete', ref.namespace, ref.scheduleId] as const

/** The schedule's description, refreshed while live (but not while it is being deleted). */
export function useScheduleDescription(ref: ScheduleRef, live: boolean) {
  const deleting = useIsMutating({ mutationKey: deleteKey(ref) }) > 0
  return useQuery({
    queryKey: schedulesKeys.describe(ref),
    queryFn: ({ signal }) => describeSchedule(ref, signal),
    refetchInterval: live && !deleting ? refreshMs : false,
  })
}

/** Refreshes what an action of the schedule changed: the schedules, and the runs it started. */
function useInvalidate(ref: ScheduleRef) {
  const qc = useQueryClient()
  const schedules = useInvalidateSchedules(ref.namespace)
  return () => Promise.all([schedules(), qc.invalidateQueries({ queryKey: runsKeys.all(ref.namespace) })])
}

/** Pauses (paused true) or unpauses the schedule, with a note. */
export function usePauseSchedule(ref: ScheduleRef) {
  const onSuccess = useInvalidate(ref)
  return useMutation({
    mutationFn: (v: { paused: boolean; note: string }) => pauseSchedule(ref, v.paused, v.note),
    onSuccess,
  })
}

/** Takes the schedule's action now. */
export function useTriggerSchedule(ref: ScheduleRef) {
  const onSuccess = useInvalidate(ref)
  return useMutation({ mutationFn: () => triggerSchedule(ref), onSuccess })
}

/** Takes the schedule's action for every fire time of a past range. */
export function useBackfillSchedule(ref: ScheduleRef) {
  const onSuccess = useInvalidate(ref)
  return useMutation({
    mutationFn: (range: { start: string; end: string; parallelism: number }) => backfillSchedule(ref, range),
    onSuccess,
  })
}

/**
 * Deletes the schedule. Its description is dropped rather than read again
 * (it is gone); the list refreshes. leave (say, opening the list) runs
 * before the delete counts as done, so that the page of the schedule is
 * gone before its description could be read again: a read then would be
 * a 404.
 */
export function useDeleteSchedule(ref: ScheduleRef, leave: () => Promise<unknown>) {
  const qc = useQueryClient()
  return useMutation({
    mutationKey: deleteKey(ref),
    mutationFn: () => deleteSchedule(ref),
    onSuccess: async () => {
      await qc.cancelQueries({ queryKey: schedulesKeys.describe(ref) })
      void qc.invalidateQueries({ queryKey: [...schedulesKeys.all(ref.namespace), 'list'] })
      await leave()
      qc.removeQueries({ queryKey: schedulesKeys.describe(ref) })
    },
  })
}
