import {
  BaseEdge,
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  useReactFlow,
  useStore,
  type Edge,
  type EdgeProps,
  type Node,
  type NodeProps,
} from '@xyflow/react'
import '@xyflow/react/dist/style.css'
import { useEffect, useMemo } from 'react'
import type { SmDefinition, SmState } from '../api/statemachines'
import type { SmStateStats } from '../pages/statemachines/queries'
import { smKindLabel } from './smKinds'
import { layoutSm, smNodeHeight, smNodeWidth, type Point } from './smLayout'
import { useTheme } from './theme'

interface StateMachineGraphProps {
  definition: SmDefinition
  /** Instances per state: each node says how many are in its state, and how many of them are queued. */
  counts?: Map<string, SmStateStats> | undefined
  /** The state an instance is in: its node is marked. */
  current?: string | undefined
  /**
   * The states an instance went through, in order (smPath): their nodes
   * are marked visited, and each move taken is drawn bold with its
   * number(s) in the path.
   */
  path?: string[] | undefined
  /** What the graph shows, for those who cannot see it. */
  label: string
}

interface StateData extends Record<string, unknown> {
  state: SmState
  count: number | undefined
  queued: number
  current: boolean
  visited: boolean
}

type StateNode = Node<StateData, 'state'>

interface RouteData extends Record<string, unknown> {
  points: Point[]
  /** The numbers of the moves of the path along this edge ("2, 5"), if taken. */
  taken: string
}

type RouteEdge = Edge<RouteData, 'route'>

const nodeTypes = { state: StateNodeView }
const edgeTypes = { route: RouteEdgeView }

/**
 * A state machine drawn as nFlow Explorer draws it (React Flow, laid out
 * left to right by dagre): a node per state, its colour and shape by its
 * kind, with the number of instances in it; an edge per permitted move, and
 * dashed edges to where failures go. Loaded lazily, with the first graph.
 */
export default function StateMachineGraph({ definition, counts, current, path, label }: StateMachineGraphProps) {
  const [theme] = useTheme()
  const layout = useMemo(() => layoutSm(definition), [definition])
  // The moves of the path, numbered from 1, by edge.
  const taken = useMemo(() => {
    const out = new Map<string, number[]>()
    for (let i = 1; i < (path?.length ?? 0); i++) {
      const id = `${path![i - 1]}->${path![i]}`
      out.set(id, [...(out.get(id) ?? []), i])
    }
    return out
  }, [path])
  const visited = useMemo(() => new Set(path ?? []), [path])
  const nodes: StateNode[] = useMemo(
    () =>
      layout.states.map(({ state, x, y }) => ({
        id: state.name,
        type: 'state',
        position: { x, y },
        width: smNodeWidth,
        height: smNodeHeight,
        data: {
          state,
          count: counts ? (counts.get(state.name)?.count ?? 0) : undefined,
          queued: counts?.get(state.name)?.queued ?? 0,
          current: current === state.name,
          visited: visited.has(state.name),
        },
        draggable: false,
        connectable: false,
        selectable: false,
        focusable: false,
      })),
    [layout, counts, current, visited],
  )
  const edges: RouteEdge[] = useMemo(
    () =>
      layout.edges.map((e) => {
        const id = `${e.from}->${e.to}`
        const steps = taken.get(id)
        const classes = [e.failure ? 'sm-edge-failure' : '', steps ? 'sm-edge-taken' : ''].filter(Boolean)
        return {
          id,
          source: e.from,
          target: e.to,
          type: 'route' as const,
          data: { points: e.points, taken: steps?.join(', ') ?? '' },
          markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 },
          focusable: false,
          selectable: false,
          // Taken moves are drawn over the others.
          zIndex: steps ? 1 : 0,
          className: classes.join(' ') || undefined,
        }
      }),
    [layout, taken],
  )
  const height = Math.min(Math.max(layout.height + 72, 150), 580)
  return (
    <div className="dag-graph sm-graph" style={{ height }} role="figure" aria-label={label}>
      <ReactFlow
        key={definition.type + definition.version}
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        colorMode={theme}
        fitView
        fitViewOptions={fitOptions}
        minZoom={0.2}
        maxZoom={1.5}
        nodesDraggable={false}
        nodesConnectable={false}
        nodesFocusable={false}
        edgesFocusable={false}
        elementsSelectable={false}
        zoomOnScroll={false}
        preventScrolling={false}
        zoomOnDoubleClick={false}
      >
        <Controls showInteractive={false} position="bottom-left" orientation="horizontal" />
        <FitOnResize />
      </ReactFlow>
    </div>
  )
}

const fitOptions = { padding: 0.08, maxZoom: 1 }

function FitOnResize() {
  const { fitView } = useReactFlow()
  const width = useStore((s) => s.width)
  const height = useStore((s) => s.height)
  useEffect(() => {
    if (width > 0 && height > 0) void fitView(fitOptions)
  }, [fitView, width, height])
  return null
}

/**
 * An edge along its laid-out line (smLayout's route, around the nodes),
 * with the numbers of the path's moves along it, if any.
 */
function RouteEdgeView({ id, data, markerEnd, style }: EdgeProps<RouteEdge>) {
  const points = data?.points ?? []
  if (points.length < 2) return null
  const d = points.map((p, i) => `${i === 0 ? 'M' : 'L'} ${p.x} ${p.y}`).join(' ')
  // The label sits on the line's first stretch out of its source.
  const [a, b] = [points[0]!, points[1]!]
  const at = { x: a.x + (b.x - a.x) / 2, y: a.y + (b.y - a.y) / 2 }
  return (
    <>
      <BaseEdge id={id} path={d} markerEnd={markerEnd} style={style} />
      {data?.taken && (
        <g className="sm-edge-steps" transform={`translate(${at.x} ${at.y})`} aria-hidden="true">
          <rect x={-4 - data.taken.length * 3.5} y={-9} width={8 + data.taken.length * 7} height={18} rx={9} />
          <text textAnchor="middle" dominantBaseline="central">
            {data.taken}
          </text>
        </g>
      )}
    </>
  )
}

/** A state's node: its name and kind, and the instances in it. */
function StateNodeView({ data }: NodeProps<StateNode>) {
  const { state, count, queued, current, visited } = data
  return (
    <div
      className={`sm-node sm-kind-${state.kind}${current ? ' current' : ''}${visited ? ' visited' : ''}${count ? ' has-instances' : ''}`}
      data-state={state.name}
      data-visited={visited || undefined}
      data-kind={state.kind}
      data-count={count ?? ''}
      data-queued={queued}
      title={state.description}
    >
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <div className="dag-node-body">
        <span className="dag-node-name">{state.name}</span>
        <span className="dag-node-meta">
          <span>{smKindLabel(state.kind)}</span>
          {current ? (
            <span className="dag-node-tag">current</span>
          ) : (
            visited && <span className="dag-node-tag sm-node-visited">visited</span>
          )}
        </span>
        {count !== undefined && (
          <span className="sm-node-count">
            {count} instance{count === 1 ? '' : 's'}
            {queued > 0 && ` · ${queued} queued`}
          </span>
        )}
      </div>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  )
}
