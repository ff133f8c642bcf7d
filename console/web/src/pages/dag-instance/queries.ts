import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  checkDag,
  commandDagInstance,
  dagTaskLog,
  describeDagInstance,
  getDagVersion,
  rerunDagInstance,
  type DagInstance,
  type DagInstanceRef,
} from '../../api/dags'
import { dagStateLive } from '../../components/dagStates'
import { dagsKeys, refreshMs } from '../dags/queries'

/** Query keys of an instance; an action on it invalidates instanceKeys.instance(ref). */
export const instanceKeys = {
  instance: (r: DagInstanceRef) => ['dag-instance', r.namespace, r.workflowId] as const,
  describe: (r: DagInstanceRef) => [...instanceKeys.instance(r), 'describe'] as const,
  log: (r: DagInstanceRef, task: string, attempt: number) =>
    [...instanceKeys.instance(r), 'log', task, attempt] as const,
}

/** The instance and its run, refreshed while it runs and live is on. */
export function useInstance(ref: DagInstanceRef, live: boolean) {
  return useQuery({
    queryKey: instanceKeys.describe(ref),
    queryFn: ({ signal }) => describeDagInstance(ref, signal),
    refetchInterval: (q) => {
      const d = q.state.data
      return live && d && (d.run.status === 'running' || dagStateLive(d.instance?.state)) ? refreshMs : false
    },
  })
}

/**
 * The graph the instance runs: the definition's text it carries, parsed by
 * the server's check (or, without it, its version's graph). Until there is
 * one, the page draws the instance's tasks unconnected.
 */
export function useInstanceDefinition(instance: DagInstance | null | undefined) {
  return useQuery({
    queryKey: ['dag-instance-definition', instance?.dag, instance?.version, instance?.definition ?? ''],
    queryFn: async ({ signal }) =>
      instance?.definition
        ? (await checkDag(instance.definition, signal)).definition
        : (await getDagVersion(instance?.dag ?? '', instance?.version ?? 0, signal)).definition,
    // An instance that has just started may not have loaded its version yet.
    enabled: !!instance && (!!instance.definition || instance.version > 0),
    staleTime: Infinity,
  })
}

/** The log of an attempt of a task (0: its last); refreshed while it runs and live is on. */
export function useTaskLog(ref: DagInstanceRef, task: string, attempt: number, enabled: boolean, running: boolean) {
  return useQuery({
    queryKey: instanceKeys.log(ref, task, attempt),
    queryFn: ({ signal }) => dagTaskLog(ref, task, attempt, signal),
    enabled,
    refetchInterval: running ? refreshMs : false,
  })
}

/** Refreshes what an action on the instance changed: the instance, its logs and the instance lists. */
function useInvalidate(ref: DagInstanceRef) {
  const qc = useQueryClient()
  return () =>
    Promise.all([
      qc.invalidateQueries({ queryKey: instanceKeys.instance(ref) }),
      qc.invalidateQueries({ queryKey: dagsKeys.instancesOf(ref.namespace) }),
    ])
}

/** Pauses, resumes or stops the instance. */
export function useCommand(ref: DagInstanceRef) {
  const onSuccess = useInvalidate(ref)
  return useMutation({
    mutationFn: (action: 'pause' | 'resume' | 'stop') => commandDagInstance(ref, action),
    onSuccess,
  })
}

/** Starts the ended instance again: whole, or from its failed tasks. */
export function useRerun(ref: DagInstanceRef) {
  const onSuccess = useInvalidate(ref)
  return useMutation({ mutationFn: (failed: boolean) => rerunDagInstance(ref, failed), onSuccess })
}
