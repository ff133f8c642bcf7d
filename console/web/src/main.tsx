import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { RouterProvider } from '@tanstack/react-router'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { ApiError } from './api/client'
import { applyTheme, initialTheme } from './components/theme'
import { router } from './router'
import './styles.css'

applyTheme(initialTheme())

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A refusal (4xx) is an answer; only a failed call is worth a retry.
      retry: (failures, error) => failures < 1 && !(error instanceof ApiError && error.status < 500),
      staleTime: 2000,
    },
  },
})

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
)
