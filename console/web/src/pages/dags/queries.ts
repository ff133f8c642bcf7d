import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  applyDag,
  getDag,
  getDagVersion,
  listDagInstances,
  listDags,
  listDagVersions,
  releaseDag,
  runDag,
  type DagRunRequest,
} from '../../api/dags'

/** How often the DAG pages refresh what may change under them (instances that run). */
export const refreshMs = 2000

/**
 * Query keys of the DAG pages. A change to a DAG (apply, release)
 * invalidates dagsKeys.all; a started instance invalidates the instance
 * lists.
 */
export const dagsKeys = {
  all: ['dags'] as const,
  list: () => [...dagsKeys.all, 'list'] as const,
  one: (name: string) => [...dagsKeys.all, 'dag', name] as const,
  versions: (name: string) => [...dagsKeys.one(name), 'versions'] as const,
  version: (name: string, version: number) => [...dagsKeys.one(name), 'version', version] as const,
  instances: (namespace: string, name: string, pageToken?: string) =>
    ['dag-instances', namespace, name, pageToken ?? ''] as const,
  instancesOf: (namespace: string) => ['dag-instances', namespace] as const,
}

/** Every DAG with its release. */
export function useDags() {
  return useQuery({ queryKey: dagsKeys.list(), queryFn: ({ signal }) => listDags(signal), select: (l) => l.dags })
}

/** A DAG: its release and current version, text and graph. */
export function useDag(name: string) {
  return useQuery({ queryKey: dagsKeys.one(name), queryFn: ({ signal }) => getDag(name, signal) })
}

/** A DAG's versions, oldest first. */
export function useDagVersions(name: string) {
  return useQuery({
    queryKey: dagsKeys.versions(name),
    queryFn: ({ signal }) => listDagVersions(name, signal),
    select: (l) => l.versions,
  })
}

/** One version of a DAG (undefined: none asked for). */
export function useDagVersion(name: string, version: number | undefined) {
  return useQuery({
    queryKey: dagsKeys.version(name, version ?? 0),
    queryFn: ({ signal }) => getDagVersion(name, version ?? 0, signal),
    enabled: version !== undefined,
    staleTime: Infinity,
  })
}

/** A page of a DAG's instances in a namespace, newest first; refreshed while live. */
export function useDagInstances(namespace: string, name: string, pageToken: string | undefined, live: boolean) {
  return useQuery({
    queryKey: dagsKeys.instances(namespace, name, pageToken),
    queryFn: ({ signal }) => listDagInstances(namespace, name, pageToken, signal),
    placeholderData: keepPreviousData,
    refetchInterval: live ? refreshMs : false,
  })
}

/** Puts a DAG online or offline, or makes a version current. */
export function useRelease(name: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (change: { online?: boolean; current?: number }) => releaseDag(name, change),
    onSuccess: () => qc.invalidateQueries({ queryKey: dagsKeys.all }),
  })
}

/** Stores a definition's text as a new version. */
export function useApply() {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (text: string) => applyDag(text),
    onSuccess: () => qc.invalidateQueries({ queryKey: dagsKeys.all }),
  })
}

/** Starts an instance of a DAG in a namespace. */
export function useRunDag(namespace: string, name: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (req: DagRunRequest) => runDag(namespace, name, req),
    onSuccess: () => qc.invalidateQueries({ queryKey: dagsKeys.instancesOf(namespace) }),
  })
}
