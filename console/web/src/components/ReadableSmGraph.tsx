import { useMemo, type ComponentProps } from 'react'
import { GraphScroll } from './GraphScroll'
import StateMachineGraph from './StateMachineGraph'
import { layoutSm } from './smLayout'

/**
 * A state machine's graph at a readable scale: on a narrow screen it
 * scrolls sideways in its box rather than shrink its names to a few pixels.
 * Loaded lazily, with the graph.
 */
export default function ReadableSmGraph(props: ComponentProps<typeof StateMachineGraph>) {
  const width = useMemo(() => layoutSm(props.definition).width, [props.definition])
  return (
    <GraphScroll width={width} label={props.label}>
      <StateMachineGraph {...props} />
    </GraphScroll>
  )
}
