import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { createSchedule, listSchedules, updateSchedule, type ScheduleRef } from '../../api/schedules'
import type { Schedule } from '../../api/types'

/** How often the schedules pages refresh while they are live. */
export const refreshMs = 3000

/**
 * Query keys of the schedules pages; a change to a schedule invalidates
 * schedulesKeys.all(ns), which holds the list and every schedule's description.
 */
export const schedulesKeys = {
  all: (namespace: string) => ['schedules', namespace] as const,
  list: (namespace: string, pageToken: string | undefined) =>
    [...schedulesKeys.all(namespace), 'list', pageToken ?? ''] as const,
  describe: (ref: ScheduleRef) => [...schedulesKeys.all(ref.namespace), 'describe', ref.scheduleId] as const,
}

/** A page of the namespace's schedules, refreshed while live. */
export function useSchedules(namespace: string, pageToken: string | undefined, live: boolean) {
  return useQuery({
    queryKey: schedulesKeys.list(namespace, pageToken),
    queryFn: ({ signal }) => listSchedules(namespace, pageToken, signal),
    placeholderData: keepPreviousData,
    refetchInterval: live ? refreshMs : false,
  })
}

/** Refreshes what a change to a schedule changed: the list and the descriptions. */
export function useInvalidateSchedules(namespace: string) {
  const qc = useQueryClient()
  return () => qc.invalidateQueries({ queryKey: schedulesKeys.all(namespace) })
}

/** Creates a schedule. */
export function useCreateSchedule(namespace: string) {
  const onSuccess = useInvalidateSchedules(namespace)
  return useMutation({
    mutationFn: (v: { scheduleId: string; schedule: Schedule }) =>
      createSchedule({ namespace, scheduleId: v.scheduleId }, v.schedule),
    onSuccess,
  })
}

/** Replaces a schedule's spec, action, policies and limit. */
export function useUpdateSchedule(ref: ScheduleRef) {
  const onSuccess = useInvalidateSchedules(ref.namespace)
  return useMutation({ mutationFn: (schedule: Schedule) => updateSchedule(ref, schedule), onSuccess })
}
