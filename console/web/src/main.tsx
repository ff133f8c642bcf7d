import { QueryClientProvider } from '@tanstack/react-query'
import { RouterProvider } from '@tanstack/react-router'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { onUnauthenticated } from './api/client'
import { applyTheme, initialTheme } from './components/theme'
import { queryClient } from './queryClient'
import { router } from './router'
import './styles.css'

applyTheme(initialTheme())

// A call answered 401 (the session expired, or was ended elsewhere): log in
// again, and come back to this page.
onUnauthenticated(() => {
  const { pathname, href } = router.state.location
  if (pathname === '/login') return
  void router.navigate({ to: '/login', search: { next: href }, replace: true })
})

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
)
