import { useQuery } from '@tanstack/react-query'
import { createContext, useContext } from 'react'
import { getDocument, type RunRef } from '../api/workflows'

/**
 * The run whose payloads the PayloadViews inside show: the run page provides
 * it, so that a payload stored as a document can be loaded. Elsewhere there
 * is none, and a document shows its id and size only.
 */
export const DocumentRun = createContext<RunRef | null>(null)

/** The run of the payloads shown, if a page provides it. */
export function useDocumentRun(): RunRef | null {
  return useContext(DocumentRun)
}

/**
 * A document of a run, fetched once enabled. A document is written once and
 * never changes: what was read is kept, and shared by every view of it.
 */
export function useDocument(run: RunRef | null, id: string, enabled: boolean) {
  return useQuery({
    queryKey: ['document', run?.namespace, run?.workflowId, run?.runId, id] as const,
    queryFn: ({ signal }) => getDocument(run!, id, signal),
    enabled: enabled && run !== null,
    staleTime: Infinity,
  })
}
