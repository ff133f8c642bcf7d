import {
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  useReactFlow,
  useStore,
  type Edge,
  type Node,
  type NodeProps,
} from '@xyflow/react'
import '@xyflow/react/dist/style.css'
import { useEffect, useMemo } from 'react'
import type { SmDefinition, SmState } from '../api/statemachines'
import type { SmStateStats } from '../pages/statemachines/queries'
import { smKindLabel } from './smKinds'
import { layoutSm, smNodeHeight, smNodeWidth } from './smLayout'
import { useTheme } from './theme'

interface StateMachineGraphProps {
  definition: SmDefinition
  /** Instances per state: each node says how many are in its state, and how many of them are queued. */
  counts?: Map<string, SmStateStats> | undefined
  /** The state an instance is in: its node is marked. */
  current?: string | undefined
  /** What the graph shows, for those who cannot see it. */
  label: string
}

interface StateData extends Record<string, unknown> {
  state: SmState
  count: number | undefined
  queued: number
  current: boolean
}

type StateNode = Node<StateData, 'state'>

const nodeTypes = { state: StateNodeView }

/**
 * A state machine drawn as nFlow Explorer draws it (React Flow, laid out
 * left to right by dagre): a node per state, its colour and shape by its
 * kind, with the number of instances in it; an edge per permitted move, and
 * dashed edges to where failures go. Loaded lazily, with the first graph.
 */
export default function StateMachineGraph({ definition, counts, current, label }: StateMachineGraphProps) {
  const [theme] = useTheme()
  const layout = useMemo(() => layoutSm(definition), [definition])
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
        },
        draggable: false,
        connectable: false,
        selectable: false,
        focusable: false,
      })),
    [layout, counts, current],
  )
  const edges: Edge[] = useMemo(
    () =>
      layout.edges.map((e) => ({
        id: `${e.from}->${e.to}`,
        source: e.from,
        target: e.to,
        type: 'smoothstep',
        markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 },
        focusable: false,
        selectable: false,
        className: e.failure ? 'sm-edge-failure' : undefined,
      })),
    [layout],
  )
  const height = Math.min(Math.max(layout.height + 72, 150), 580)
  return (
    <div className="dag-graph sm-graph" style={{ height }} role="figure" aria-label={label}>
      <ReactFlow
        key={definition.type + definition.version}
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
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

/** A state's node: its name and kind, and the instances in it. */
function StateNodeView({ data }: NodeProps<StateNode>) {
  const { state, count, queued, current } = data
  return (
    <div
      className={`sm-node sm-kind-${state.kind}${current ? ' current' : ''}${count ? ' has-instances' : ''}`}
      data-state={state.name}
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
          {current && <span className="dag-node-tag">current</span>}
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
