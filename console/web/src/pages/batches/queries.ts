import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { describeBatch, listBatches, startBatch, stopBatch } from '../../api/batches'
import type { StartBatchRequest } from '../../api/types'
import { runsKeys } from '../runs/queries'

/** How often the batches pages refresh while they are live, and a running batch's progress. */
export const refreshMs = 3000
export const progressMs = 1000

/** Query keys of the batches; starting or stopping one invalidates batchesKeys.all(ns). */
export const batchesKeys = {
  all: (namespace: string) => ['batches', namespace] as const,
  list: (namespace: string) => [...batchesKeys.all(namespace), 'list'] as const,
  describe: (namespace: string, batchId: string) => [...batchesKeys.all(namespace), 'describe', batchId] as const,
}

/** The namespace's batches, newest first, refreshed while live. */
export function useBatches(namespace: string, live: boolean) {
  return useQuery({
    queryKey: batchesKeys.list(namespace),
    queryFn: ({ signal }) => listBatches(namespace, signal),
    refetchInterval: live ? refreshMs : false,
  })
}

/** A batch's progress, read every second while it runs (and live is on). */
export function useBatch(namespace: string, batchId: string, live = true) {
  return useQuery({
    queryKey: batchesKeys.describe(namespace, batchId),
    queryFn: ({ signal }) => describeBatch(namespace, batchId, signal),
    refetchInterval: (q) => (live && (q.state.data?.state ?? 'running') === 'running' ? progressMs : false),
  })
}

/** Starts a batch; the answer names it. */
export function useStartBatch(namespace: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (req: StartBatchRequest) => startBatch(namespace, req),
    onSuccess: () => qc.invalidateQueries({ queryKey: batchesKeys.all(namespace) }),
  })
}

/** Stops a batch; the runs it acted on stay as they are. */
export function useStopBatch(namespace: string, batchId: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: () => stopBatch(namespace, batchId),
    onSuccess: () =>
      Promise.all([
        qc.invalidateQueries({ queryKey: batchesKeys.all(namespace) }),
        qc.invalidateQueries({ queryKey: runsKeys.all(namespace) }),
      ]),
  })
}
