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
import type { DagTask, DagTaskInstance } from '../api/dags'
import { layoutDag, nodeHeight, nodeWidth } from './dagLayout'
import { GraphScroll, readableZoom } from './GraphScroll'
import { dagStateLabel, dagTone } from './dagStates'
import { useTheme } from './theme'

interface DagGraphProps {
  /** The definition's tasks. */
  tasks: DagTask[]
  /** An instance's tasks by name: each node then shows its task's state. */
  states?: Map<string, DagTaskInstance> | undefined
  /** The task whose details are open. */
  selected?: string | undefined
  /** Makes each node a button that selects its task. */
  onSelect?: ((task: string) => void) | undefined
  /** What the graph shows, for those who cannot see it. */
  label: string
}

interface TaskData extends Record<string, unknown> {
  task: DagTask
  instance: DagTaskInstance | undefined
  withState: boolean
  selected: boolean
  /** Nodes are buttons: the graph's onNodeClick selects. */
  selectable: boolean
}

type TaskNode = Node<TaskData, 'task'>

const nodeTypes = { task: TaskNodeView }

/**
 * A definition's tasks drawn as a DAG (React Flow, laid out left to right
 * by dagre): each node has the task's name and type, forbidden tasks are
 * dashed and tagged, and with an instance's states each node is coloured by
 * its task's state and says it (and the attempt, from the second on). The
 * graph does not edit: nodes neither move nor connect. Loaded lazily, with
 * the first graph.
 */
export default function DagGraph({ tasks, states, selected, onSelect, label }: DagGraphProps) {
  const [theme] = useTheme()
  const withState = states !== undefined
  const layout = useMemo(() => layoutDag(tasks, withState), [tasks, withState])
  const nodes: TaskNode[] = useMemo(
    () =>
      layout.tasks.map(({ task, x, y }) => ({
        id: task.name,
        type: 'task',
        position: { x, y },
        width: nodeWidth,
        height: nodeHeight(withState),
        data: {
          task,
          instance: states?.get(task.name),
          withState,
          selected: selected === task.name,
          selectable: onSelect !== undefined,
        },
        draggable: false,
        connectable: false,
        selectable: false,
        focusable: false,
      })),
    [layout, states, selected, onSelect, withState],
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
        className: states?.get(e.from)?.state === 'success' ? 'dag-edge-done' : undefined,
      })),
    [layout, states],
  )
  // The drawing at full size, within bounds: a small graph is not blown up,
  // a large one is scaled down to fit (and can be zoomed).
  // Room above and below for the zoom buttons.
  const height = Math.min(Math.max(layout.height + 72, 150), 580)
  // A new graph (another version, an edited text) is fitted again.
  const shape = useMemo(() => layout.tasks.map((t) => t.task.name).join('\u0000') + layout.edges.length, [layout])
  return (
    // Never drawn smaller than readable: on a narrow screen the box scrolls sideways.
    <GraphScroll width={layout.width} label={label}>
      <div className="dag-graph" style={{ height }} role="figure" aria-label={label}>
        <ReactFlow
          key={shape}
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
          // A node's button is clicked by the pointer or the keyboard; the
          // click reaches the node (which, with a click handler, takes the
          // pointer's events rather than leaving them to the pane).
          onNodeClick={onSelect ? (_, n) => onSelect(n.id) : undefined}
        >
          <Controls showInteractive={false} position="bottom-left" orientation="horizontal" />
          <FitOnResize />
        </ReactFlow>
      </div>
    </GraphScroll>
  )
}

/** How the graph is fitted to its box: whole, at most at full size, at least readable. */
const fitOptions = { padding: 0.08, maxZoom: 1, minZoom: readableZoom }

/** Fits the graph again when its box changes size (a panel opened beside it, a narrower window). */
function FitOnResize() {
  const { fitView } = useReactFlow()
  const width = useStore((s) => s.width)
  const height = useStore((s) => s.height)
  useEffect(() => {
    if (width > 0 && height > 0) void fitView(fitOptions)
  }, [fitView, width, height])
  return null
}

/** A task's node: its name, type and marks; with an instance, its state. */
function TaskNodeView({ data }: NodeProps<TaskNode>) {
  const { task, instance, withState, selected, selectable } = data
  const state = instance?.state
  const tone = withState ? dagTone(state) : task.forbidden ? 'off' : 'plain'
  const attempt = instance?.attempt ?? 0
  const body = (
    <>
      <span className="dag-node-name" title={task.name}>
        {task.name}
      </span>
      <span className="dag-node-meta">
        <span>{task.type}</span>
        {task.forbidden && <span className="dag-node-tag">forbidden</span>}
        {(task.retries ?? 0) > 0 && !withState && <span className="dag-node-tag">retries {task.retries}</span>}
      </span>
      {withState && (
        <span className="dag-node-state">
          {state ? dagStateLabel(state) : 'Not started'}
          {attempt > 1 && <span className="dag-node-attempt"> · attempt {attempt}</span>}
        </span>
      )}
    </>
  )
  const className = `dag-node dag-tone-${tone}${task.forbidden ? ' forbidden' : ''}${selected ? ' selected' : ''}`
  return (
    <div className={className} data-task={task.name} data-type={task.type} data-state={state ?? ''}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      {selectable ? (
        <button
          type="button"
          className="dag-node-body"
          aria-pressed={selected}
          aria-label={`${task.name}, ${task.type}${task.forbidden ? ', forbidden' : ''}: ${
            state ? dagStateLabel(state) : 'not started'
          }${attempt > 1 ? `, attempt ${attempt}` : ''}`}
        >
          {body}
        </button>
      ) : (
        <div className="dag-node-body">{body}</div>
      )}
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  )
}
