import { Outlet, useNavigate, useParams } from '@tanstack/react-router'
import { Layout } from '../../components/Layout'
import { defaultNamespace } from '../../api/namespaces'
import { useNamespaces } from './queries'

/** The frame around every page, with the namespace the URL names. */
export function RootPage() {
  const namespace = useParams({ strict: false }).namespace ?? defaultNamespace
  const namespaces = useNamespaces()
  const navigate = useNavigate()
  return (
    <Layout
      namespace={namespace}
      namespaces={namespaces.data}
      onNamespaceChange={(ns) => void navigate({ to: '/namespaces/$namespace/runs', params: { namespace: ns } })}
    >
      <Outlet />
    </Layout>
  )
}
