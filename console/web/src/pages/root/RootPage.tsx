import { Outlet, useNavigate, useParams, useRouterState, useSearch } from '@tanstack/react-router'
import { Layout, LoginFrame } from '../../components/Layout'
import { defaultNamespace } from '../../api/namespaces'
import { namespaceSearch } from '../dags/search'
import { useNamespaces } from './queries'

/** The pages of a namespace that choosing another namespace stays on; from any other page it leads to the runs. */
const namespacePages = [
  '/namespaces/$namespace/overview',
  '/namespaces/$namespace/runs',
  '/namespaces/$namespace/schedules',
  '/namespaces/$namespace/batches',
  '/namespaces/$namespace/queues',
  '/namespaces/$namespace/sagas',
] as const

/**
 * The DAG pages: DAGs are no namespace's, their instances are; these pages
 * name the namespace of the instances they list and start in their search.
 */
const dagPages = ['/dags', '/dags/$name', '/dags/new', '/dags/$name/edit'] as const

/** The frame around every page: the login page's own, or the console's with the namespace the URL names. */
export function RootPage() {
  const page = useRouterState({ select: (s) => s.matches.at(-1)?.routeId })
  if (page === '/login') {
    return (
      <LoginFrame>
        <Outlet />
      </LoginFrame>
    )
  }
  return <ConsoleFrame page={page} />
}

/** The console's frame: the header with the namespaces, and the page. */
function ConsoleFrame({ page }: { page: string | undefined }) {
  const search = useSearch({ strict: false }) as { namespace?: unknown }
  const namespace =
    useParams({ strict: false }).namespace ??
    (typeof search.namespace === 'string' ? search.namespace : undefined) ??
    defaultNamespace
  const namespaces = useNamespaces()
  const navigate = useNavigate()
  const to = namespacePages.find((p) => p === page) ?? '/namespaces/$namespace/runs'
  const onDagPage = dagPages.some((p) => p === page) || page === '/dag-instances/$namespace/$workflowId'
  return (
    <Layout
      namespace={namespace}
      namespaces={namespaces.data}
      onNamespaceChange={(ns) =>
        void (onDagPage
          ? // The same DAG page, listing the instances of the other namespace (an instance's page: the DAGs).
            navigate({
              to: page === '/dag-instances/$namespace/$workflowId' ? '/dags' : '.',
              search: namespaceSearch(ns),
            })
          : navigate({ to, params: { namespace: ns } }))
      }
    >
      <Outlet />
    </Layout>
  )
}
