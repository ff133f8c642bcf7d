import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  createSmInstance,
  getSmInstance,
  getStateMachine,
  getStateMachineVersion,
  listSmInstances,
  listStateMachines,
  signalSmInstance,
  stateMachineStats,
  updateSmInstance,
  wakeupSmInstance,
  type SmCreateRequest,
  type SmFilter,
  type SmUpdateRequest,
} from '../../api/statemachines'

/** How often the state machine pages refresh what may change under them. */
export const refreshMs = 2000

/** Query keys: a change to an instance invalidates smKeys.namespace(ns). */
export const smKeys = {
  definitions: () => ['statemachines'] as const,
  definition: (type: string) => ['statemachines', type] as const,
  version: (type: string, version: number) => ['statemachines', type, 'version', version] as const,
  namespace: (ns: string) => ['sm-instances', ns] as const,
  stats: (ns: string, type: string) => [...smKeys.namespace(ns), 'stats', type] as const,
  list: (ns: string, filter: SmFilter, token?: string) =>
    [...smKeys.namespace(ns), 'list', filter, token ?? ''] as const,
  instance: (ns: string, id: string) => [...smKeys.namespace(ns), 'instance', id] as const,
}

/** Every definition's latest version. */
export function useStateMachines() {
  return useQuery({
    queryKey: smKeys.definitions(),
    queryFn: ({ signal }) => listStateMachines(signal),
    select: (l) => l.definitions,
  })
}

/** One definition's latest version (undefined: none stored). */
export function useStateMachine(type: string) {
  return useQuery({
    queryKey: smKeys.definition(type),
    queryFn: ({ signal }) => getStateMachine(type, signal),
    // An instance's page asks once it knows the instance's type.
    enabled: type !== '',
    select: (l) => l.definitions[0],
  })
}

/** One version of a definition (the one an instance runs on); versions never change. */
export function useStateMachineVersion(type: string, version: number) {
  return useQuery({
    queryKey: smKeys.version(type, version),
    queryFn: ({ signal }) => getStateMachineVersion(type, version, signal),
    // An instance's page asks once it knows the instance.
    enabled: type !== '' && version > 0,
    staleTime: Infinity,
  })
}

/** A state's instances: how many, and how many of them are queued (their next activation has come). */
export interface SmStateStats {
  count: number
  queued: number
}

/** A type's instances per state, summed over their statuses; refreshed while live. */
export function useSmStats(namespace: string, type: string, live: boolean) {
  return useQuery({
    queryKey: smKeys.stats(namespace, type),
    queryFn: ({ signal }) => stateMachineStats(namespace, type, signal),
    refetchInterval: live ? refreshMs : false,
    select: (s) => {
      const m = new Map<string, SmStateStats>()
      for (const c of s.states) {
        const was = m.get(c.state) ?? { count: 0, queued: 0 }
        m.set(c.state, { count: was.count + c.count, queued: was.queued + (c.queued ?? 0) })
      }
      return m
    },
  })
}

/** A page of instances; refreshed while live. */
export function useSmInstances(namespace: string, filter: SmFilter, token: string | undefined, live: boolean) {
  return useQuery({
    queryKey: smKeys.list(namespace, filter, token),
    queryFn: ({ signal }) => listSmInstances(namespace, filter, token, signal),
    placeholderData: keepPreviousData,
    refetchInterval: live ? refreshMs : false,
  })
}

/** An instance with its actions; refreshed while live and it has not finished. */
export function useSmInstance(namespace: string, id: string, live: boolean) {
  return useQuery({
    queryKey: smKeys.instance(namespace, id),
    queryFn: ({ signal }) => getSmInstance(namespace, id, signal),
    refetchInterval: (q) => (live && q.state.data?.status !== 'finished' ? refreshMs : false),
  })
}

function useInvalidate(namespace: string) {
  const qc = useQueryClient()
  return () => qc.invalidateQueries({ queryKey: smKeys.namespace(namespace) })
}

/** Creates an instance. */
export function useCreateSmInstance(namespace: string) {
  const onSuccess = useInvalidate(namespace)
  return useMutation({ mutationFn: (req: SmCreateRequest) => createSmInstance(namespace, req), onSuccess })
}

/** Changes an instance from outside. */
export function useUpdateSmInstance(namespace: string, id: string) {
  const onSuccess = useInvalidate(namespace)
  return useMutation({ mutationFn: (req: SmUpdateRequest) => updateSmInstance(namespace, id, req), onSuccess })
}

/** Wakes an instance. */
export function useWakeupSmInstance(namespace: string, id: string) {
  const onSuccess = useInvalidate(namespace)
  return useMutation({ mutationFn: () => wakeupSmInstance(namespace, id), onSuccess })
}

/** Sets (or clears) an instance's signal. */
export function useSignalSmInstance(namespace: string, id: string) {
  const onSuccess = useInvalidate(namespace)
  return useMutation({
    mutationFn: (s: { signal: number | null; reason?: string }) => signalSmInstance(namespace, id, s.signal, s.reason),
    onSuccess,
  })
}
