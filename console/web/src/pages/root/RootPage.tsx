import { Outlet, useNavigate, useParams, useRouterState } from '@tanstack/react-router'
import { Layout } from '../../components/Layout'
import { defaultNamespace } from '../../api/namespaces'
import { useNamespaces } from './queries'

/** The pages of a namespace that choosing another namespace stays on; from any other page it leads to the runs. */
const namespacePages = [
  '/namespaces/$namespace/overview',
  '/namespaces/$namespace/runs',
  '/namespaces/$namespace/schedules',
  '/namespaces/$namespace/batches',
  '/namespaces/$namespace/queues',
] as const

/** The frame around every page, with the namespace the URL names. */
export function RootPage() {
  const namespace = useParams({ strict: false }).namespace ?? defaultNamespace
  const namespaces = useNamespaces()
  const navigate = useNavigate()
  const page = useRouterState({ select: (s) => s.matches.at(-1)?.routeId })
  const to = namespacePages.find((p) => p === page) ?? '/namespaces/$namespace/runs'
  return (
    <Layout
      namespace={namespace}
      namespaces={namespaces.data}
      onNamespaceChange={(ns) => void navigate({ to, params: { namespace: ns } })}
    >
      <Outlet />
    </Layout>
  )
}
