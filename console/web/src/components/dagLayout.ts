import dagre from '@dagrejs/dagre'
import type { DagTask } from '../api/dags'

/** A task's place in the drawing: the top left corner of its node. */
export interface PlacedTask {
  task: DagTask
  x: number
  y: number
}

/** A drawn edge: from an upstream task to the task that waits for it. */
export interface DagEdge {
  from: string
  to: string
}

/** A definition's graph, laid out left to right. */
export interface DagLayout {
  tasks: PlacedTask[]
  edges: DagEdge[]
  width: number
  height: number
}

/** The size of a node: with its state (an instance's), a line taller. */
export const nodeWidth = 184
export function nodeHeight(withState: boolean): number {
  return withState ? 66 : 48
}

/**
 * Lays out the tasks with dagre, left to right: each task after the tasks
 * it waits for. Upstream names that name no task (a text being edited) and
 * repeated ones draw no edge.
 */
export function layoutDag(tasks: DagTask[], withState: boolean): DagLayout {
  const g = new dagre.graphlib.Graph()
  g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 56, marginx: 8, marginy: 8 })
  g.setDefaultEdgeLabel(() => ({}))
  const h = nodeHeight(withState)
  const names = new Set<string>()
  for (const t of tasks) {
    if (names.has(t.name)) continue
    names.add(t.name)
    g.setNode(t.name, { width: nodeWidth, height: h })
  }
  const edges: DagEdge[] = []
  const seen = new Set<string>()
  for (const t of tasks) {
    for (const up of t.upstream ?? []) {
      const key = `${up}\u0000${t.name}`
      if (!names.has(up) || up === t.name || seen.has(key)) continue
      seen.add(key)
      edges.push({ from: up, to: t.name })
      g.setEdge(up, t.name)
    }
  }
  dagre.layout(g)
  const placed: PlacedTask[] = []
  const drawn = new Set<string>()
  for (const t of tasks) {
    if (drawn.has(t.name)) continue
    drawn.add(t.name)
    const n = g.node(t.name)
    placed.push({ task: t, x: (n?.x ?? 0) - nodeWidth / 2, y: (n?.y ?? 0) - h / 2 })
  }
  const graph = g.graph()
  return { tasks: placed, edges, width: graph.width ?? 0, height: graph.height ?? 0 }
}
