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

/** A point of the drawing. */
export interface Point {
  x: number
  y: number
}

/** An edge as laid out: the points of its line, from the source's side to the target's. */
export interface RoutedEdge extends SmEdge {
  points: Point[]
}

/** A definition's graph, laid out left to right. */
export interface SmLayout {
  states: PlacedState[]
  edges: RoutedEdge[]
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
  const columns = [...new Set(states.map((p) => p.x + smNodeWidth / 2))]
  const routed = edges.map((e, i) => {
    const from = g.node(e.from)
    const to = g.node(e.to)
    const via = (g.edge(e.from, e.to)?.points ?? []).slice(1, -1)
    // Edges that share a gap between columns run side by side in it.
    const lane = ((i % 5) - 2) * 6
    return { ...e, points: route({ x: from.x, y: from.y }, via, { x: to.x, y: to.y }, columns, lane) }
  })
  return { states, edges: routed, width: graph.width ?? 0, height: graph.height ?? 0 }
}

/**
 * The line of an edge around the nodes. Dagre puts the states in columns
 * (ranks), with a rank between two columns for the edges' labels, and an
 * edge's bends (via) in the ranks it crosses: in a gap between columns,
 * or in a column, in a row its nodes leave free. The line leaves its
 * source from the side facing the next bend, moves across rows only in
 * the gaps (lane shifts it there, so edges sharing a gap run side by
 * side) and passes a column along a free row. So it never crosses a node,
 * as straight segments between dagre's bends did where they cut a node's
 * corner. columns are the x's of the columns' centres.
 */
export function route(from: Point, via: Point[], to: Point, columns: number[], lane = 0): Point[] {
  const half = smNodeWidth / 2
  const inColumn = (p: Point) => columns.some((c) => Math.abs(p.x - c) < half)
  const side = (a: Point, b: Point) => (b.x >= a.x ? 1 : -1)
  const first = via[0] ?? to
  const last = via.at(-1) ?? from
  const end = { x: to.x - side(last, to) * half, y: to.y }
  const out: Point[] = [{ x: from.x + side(from, first) * half, y: from.y }]
  const stops = [...via, end]
  let y = from.y
  stops.forEach((p, i) => {
    const x = out.at(-1)!.x
    if (i < stops.length - 1 && !inColumn(p)) {
      // A gap: across to the row of the next stop in a column.
      const next = stops.slice(i + 1).find((q, k) => i + 1 + k === stops.length - 1 || inColumn(q))!
      out.push({ x: p.x + lane, y }, { x: p.x + lane, y: next.y })
      y = next.y
      return
    }
    if (Math.abs(p.y - y) >= 0.5) {
      // No gap before it: across rows halfway.
      const mid = (x + p.x) / 2 + lane
      out.push({ x: mid, y }, { x: mid, y: p.y })
      y = p.y
    }
    out.push({ x: p.x, y })
  })
  return simplify(out)
}

/** Drops points that repeat or lie on a straight line between their neighbours. */
function simplify(ps: Point[]): Point[] {
  const out: Point[] = []
  for (const p of ps) {
    const a = out.at(-2)
    const b = out.at(-1)
    if (b && Math.abs(b.x - p.x) < 0.5 && Math.abs(b.y - p.y) < 0.5) continue
    if (a && b && ((a.x === b.x && b.x === p.x) || (a.y === b.y && b.y === p.y))) out.pop()
    out.push(p)
  }
  return out
}

/**
 * The states an instance went through, in order: the states of its
 * actions, then the state it is in. No action records the move into a
 * manual state (a state method moves there; a person's external change,
 * the next action, moves it on), so where two states in a row have no
 * move between them, the one manual state both moves pass through is put
 * between them.
 */
export function smPath(
  def: Pick<SmDefinition, 'states' | 'transitions' | 'error_state'>,
  states: string[],
  current: string | undefined,
): string[] {
  const moves = new Set(smEdges(def).map((e) => `${e.from}\u0000${e.to}`))
  const manual = (def.states ?? []).filter((s) => s.kind === 'manual').map((s) => s.name)
  const out: string[] = []
  const visit = (s: string) => {
    const last = out.at(-1)
    if (last === s) return
    if (last !== undefined && !moves.has(`${last}\u0000${s}`)) {
      const via = manual.filter((m) => moves.has(`${last}\u0000${m}`) && moves.has(`${m}\u0000${s}`))
      if (via.length === 1) out.push(via[0]!)
    }
    out.push(s)
  }
  for (const s of states) visit(s)
  if (current) visit(current)
  return out
}
