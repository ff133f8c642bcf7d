import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import type { Payload, ResetOptions, StartRequest } from '../../api/types'
import {
  cancelWorkflow,
  describeWorkflow,
  getHistory,
  pauseWorkflow,
  queryWorkflow,
  rerunWorkflow,
  resetWorkflow,
  resumeWorkflow,
  signalWorkflow,
  startWorkflow,
  terminateWorkflow,
  type RunRef,
} from '../../api/workflows'
import { runsKeys } from '../runs/queries'

/** How often a running run's page refreshes while it is live. */
export const refreshMs = 3000

/** Query keys of a run; an action on it invalidates runKeys.run(ref). */
export const runKeys = {
  run: (r: RunRef) => ['run', r.namespace, r.workflowId, r.runId] as const,
  describe: (r: RunRef) => [...runKeys.run(r), 'describe'] as const,
  history: (r: RunRef, nextEventId: number) => [...runKeys.run(r), 'history', nextEventId] as const,
}

/** The run's description, refreshed while it runs and live is on. */
export function useDescription(run: RunRef, live: boolean) {
  return useQuery({
    queryKey: runKeys.describe(run),
    queryFn: ({ signal }) => describeWorkflow(run, signal),
    refetchInterval: (q) => (live && q.state.data?.status === 'running' ? refreshMs : false),
  })
}

/**
 * The run's whole history. It is read again only when the description's
 * next_event_id says events were added: the key holds it.
 */
export function useHistory(run: RunRef, nextEventId: number | undefined) {
  return useQuery({
    queryKey: runKeys.history(run, nextEventId ?? 0),
    queryFn: ({ signal }) => getHistory(run, signal),
    enabled: nextEventId !== undefined,
    placeholderData: keepPreviousData,
    staleTime: Infinity,
  })
}

/** Refreshes what an action on the run changed: the run and the run lists. */
function useInvalidate(run: RunRef) {
  const qc = useQueryClient()
  return () =>
    Promise.all([
      qc.invalidateQueries({ queryKey: runKeys.run(run) }),
      qc.invalidateQueries({ queryKey: runsKeys.all(run.namespace) }),
    ])
}

/** Sends a signal to the run. */
export function useSignal(run: RunRef) {
  const onSuccess = useInvalidate(run)
  return useMutation({
    mutationFn: (v: { name: string; input: Payload }) => signalWorkflow(run, v.name, v.input),
    onSuccess,
  })
}

/** Queries the run; the answer is the mutation's data. */
export function useQueryRun(run: RunRef) {
  return useMutation({ mutationFn: (v: { name: string; input: Payload }) => queryWorkflow(run, v.name, v.input) })
}

/** Asks the run to cancel. */
export function useCancel(run: RunRef) {
  const onSuccess = useInvalidate(run)
  return useMutation({ mutationFn: (reason: string) => cancelWorkflow(run, reason), onSuccess })
}

/** Terminates the run. */
export function useTerminate(run: RunRef) {
  const onSuccess = useInvalidate(run)
  return useMutation({ mutationFn: (reason: string) => terminateWorkflow(run, reason), onSuccess })
}

/** Starts a new run in the run's namespace; the run lists refresh. */
export function useStart(namespace: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (req: StartRequest) => startWorkflow(namespace, req),
    onSuccess: () => qc.invalidateQueries({ queryKey: runsKeys.all(namespace) }),
  })
}

/** Pauses the run: no workflow task or step is dispatched until it is resumed. */
export function usePause(run: RunRef) {
  const onSuccess = useInvalidate(run)
  return useMutation({ mutationFn: (reason: string) => pauseWorkflow(run, reason), onSuccess })
}

/** Resumes the paused run. */
export function useResume(run: RunRef) {
  const onSuccess = useInvalidate(run)
  return useMutation({ mutationFn: (reason: string) => resumeWorkflow(run, reason), onSuccess })
}

/** Resets the run to a point of its history; the new run is the mutation's data. */
export function useReset(run: RunRef) {
  const onSuccess = useInvalidate(run)
  return useMutation({ mutationFn: (opts: ResetOptions) => resetWorkflow(run, opts), onSuccess })
}

/** Starts the closed run again, with the request id given; the new run is the mutation's data. */
export function useRerun(run: RunRef) {
  const onSuccess = useInvalidate(run)
  return useMutation({ mutationFn: (requestId: string) => rerunWorkflow(run, requestId), onSuccess })
}
