import { QueryClient } from '@tanstack/react-query'
import { ApiError } from './api/client'

/** The console's one query cache: the router reads who-am-I into it before any page. */
export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A refusal (4xx) is an answer; only a failed call is worth a retry.
      retry: (failures, error) => failures < 1 && !(error instanceof ApiError && error.status < 500),
      staleTime: 2000,
    },
  },
})
