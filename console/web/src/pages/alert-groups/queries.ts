import { queryOptions, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  deleteAlertGroup,
  getAlertGroup,
  listAlertGroups,
  setAlertGroup,
  testAlertGroup,
  type AlertGroup,
} from '../../api/alerts'

/** Every alert group. */
export const alertGroupsQuery = queryOptions({
  queryKey: ['alert-groups'],
  queryFn: ({ signal }) => listAlertGroups(signal),
})

/** One alert group and its recent alerts. */
export function alertGroupQuery(name: string) {
  return queryOptions({
    queryKey: ['alert-groups', name],
    queryFn: ({ signal }) => getAlertGroup(name, signal),
  })
}

export function useAlertGroups() {
  return useQuery(alertGroupsQuery)
}

export function useAlertGroup(name: string) {
  return useQuery({ ...alertGroupQuery(name), refetchInterval: 5000 })
}

/** Creates or replaces a group; the lists are read again. */
export function useSetAlertGroup() {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: ({ name, group }: { name: string; group: AlertGroup }) => setAlertGroup(name, group),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['alert-groups'] }),
  })
}

/** Deletes a group. */
export function useDeleteAlertGroup() {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (name: string) => deleteAlertGroup(name),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['alert-groups'] }),
  })
}

/** Sends a test alert; the group's recent alerts are read again. */
export function useTestAlertGroup() {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (name: string) => testAlertGroup(name),
    onSettled: (_d, _e, name) => qc.invalidateQueries({ queryKey: ['alert-groups', name] }),
  })
}
