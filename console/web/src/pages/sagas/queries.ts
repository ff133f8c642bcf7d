import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  changeSaga,
  getSaga,
  listSagas,
  resolveSaga,
  sagaLive,
  startSagaBatch,
  type SagaAction,
  type SagaBatchRequest,
  type SagaChange,
  type SagaFilter,
} from '../../api/sagas'
import { batchesKeys } from '../batches/queries'

/** How often the saga pages refresh what may change under them. */
export const refreshMs = 2000

/** Query keys: an operator's action on a saga invalidates sagaKeys.namespace(ns). */
export const sagaKeys = {
  namespace: (ns: string) => ['sagas', ns] as const,
  list: (ns: string, filter: SagaFilter, token?: string) =>
    [...sagaKeys.namespace(ns), 'list', filter, token ?? ''] as const,
  saga: (ns: string, id: string) => [...sagaKeys.namespace(ns), 'saga', id] as const,
}

/**
 * A page of sagas; refreshed while live. filter() makes the filter when the
 * page is read, so that "the last hour" moves on with each refresh; key is
 * what it is made of.
 */
export function useSagas(
  namespace: string,
  key: Record<string, string | undefined>,
  filter: () => SagaFilter,
  token: string | undefined,
  live: boolean,
) {
  return useQuery({
    queryKey: sagaKeys.list(namespace, key, token),
    queryFn: ({ signal }) => listSagas(namespace, filter(), token, signal),
    placeholderData: keepPreviousData,
    refetchInterval: live ? refreshMs : false,
  })
}

/** A saga's record; refreshed while live and its run runs. */
export function useSaga(namespace: string, id: string, live: boolean) {
  return useQuery({
    queryKey: sagaKeys.saga(namespace, id),
    queryFn: ({ signal }) => getSaga(namespace, id, signal),
    refetchInterval: (q) => (live && sagaLive(q.state.data) ? refreshMs : false),
  })
}

/** After an action, refused or not: what the pages show is read again. */
function useInvalidate(namespace: string) {
  const qc = useQueryClient()
  return () => qc.invalidateQueries({ queryKey: sagaKeys.namespace(namespace) })
}

/** Decides a failed compensation of a saga. */
export function useResolveSaga(namespace: string, id: string) {
  const onSettled = useInvalidate(namespace)
  return useMutation({
    mutationFn: (d: { action: SagaAction; step?: string; note?: string }) => resolveSaga(namespace, id, d),
    onSettled,
  })
}

/** Terminates, disables or enables a saga. */
export function useChangeSaga(namespace: string, id: string) {
  const onSettled = useInvalidate(namespace)
  return useMutation({
    mutationFn: (c: { change: SagaChange; reason?: string }) => changeSaga(namespace, id, c.change, c.reason),
    onSettled,
  })
}

/** Starts a batch over the sagas a filter selects. */
export function useStartSagaBatch(namespace: string) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: (req: SagaBatchRequest) => startSagaBatch(namespace, req),
    onSuccess: () => qc.invalidateQueries({ queryKey: batchesKeys.all(namespace) }),
  })
}
