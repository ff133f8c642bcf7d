import dagre from '@dagrejs/dagre'
import type { SmDefinition, SmState } from '../api/statemachines'

/** A state's place in the drawing: the top left corner of its node. */
export interface PlacedState {
  state: SmState
  x: number
  y: number
}

/** A drawn edge: a permitted move, or where a state's failures go (dashed). */
export interface SmEdge {
  from: string
  to: string
  failure: boolean
}

/** A definition's graph, laid out left to right. */
export interface SmLayout {
  states: PlacedState[]
  edges: SmEdge[]
  width: number
  height: number
}

export const smNodeWidth = 200
export const smNodeHeight = 62

/** The kinds whose states run a method, and so may fail. */
const working = new Set(['start', 'normal', 'wait'])

/**
 * The edges of a definition: each permitted move, then, dashed, where each
 * state that runs a method goes when its retries run out (its failure
 * state, or else the definition's error state) unless a permitted move
 * already leads there.
 */
export function smEdges(def: Pick<SmDefinition, 'states' | 'transitions' | 'error_state'>): SmEdge[] {
  const names = new Set((def.states ?? []).map((s) => s.name))
  const edges: SmEdge[] = []
  const seen = new Set<string>()
  const add = (from: string, to: string, failure: boolean) => {
    const key = `${from}\u0000${to}`
    if (!names.has(from) || !names.has(to) || from === to || seen.has(key)) return
    seen.add(key)
    edges.push({ from, to, failure })
  }
  for (const s of def.states ?? []) for (const to of def.transitions?.[s.name] ?? []) add(s.name, to, false)
  for (const s of def.states ?? []) {
    const to = s.failure || (working.has(s.kind) ? def.error_state : undefined)
    if (to) add(s.name, to, true)
  }
  return edges
}

/** Lays out the states with dagre, left to right, the permitted moves weighing more than the failure edges. */
export function layoutSm(def: Pick<SmDefinition, 'states' | 'transitions' | 'error_state'>): SmLayout {
  const g = new dagre.graphlib.Graph()
  g.setGraph({ rankdir: 'LR', nodesep: 22, ranksep: 60, marginx: 8, marginy: 8 })
  g.setDefaultEdgeLabel(() => ({}))
  for (const s of def.states ?? []) g.setNode(s.name, { width: smNodeWidth, height: smNodeHeight })
  const edges = smEdges(def)
  for (const e of edges) g.setEdge(e.from, e.to, { weight: e.failure ? 1 : 4, minlen: e.failure ? 1 : 1 })
  dagre.layout(g)
  const states = (def.states ?? []).map((state) => {
    const n = g.node(state.name)
    return { state, x: (n?.x ?? 0) - smNodeWidth / 2, y: (n?.y ?? 0) - smNodeHeight / 2 }
  })
  const graph = g.graph()
  return { states, edges, width: graph.width ?? 0, height: graph.height ?? 0 }
}
