import { init, use, type EChartsCoreOption, type EChartsType } from 'echarts/core'
import { CanvasRenderer } from 'echarts/renderers'
import { useEffect, useRef } from 'react'

use([CanvasRenderer])

interface EChartProps {
  /** The chart; its series and components must have been registered with use(). */
  option: EChartsCoreOption
  height: number
  /** What the chart shows, for those who cannot see it. */
  label: string
}

/**
 * An ECharts chart that follows its option and its box's size. Only
 * echarts/core is imported: each chart registers the pieces it draws with, so
 * that the bundle holds no more of ECharts than the console uses.
 */
export function EChart({ option, height, label }: EChartProps) {
  const box = useRef<HTMLDivElement>(null)
  const chart = useRef<EChartsType>(null)

  useEffect(() => {
    const el = box.current
    if (!el) return
    const c = init(el)
    chart.current = c
    const observer = new ResizeObserver(() => c.resize())
    observer.observe(el)
    return () => {
      observer.disconnect()
      c.dispose()
      chart.current = null
    }
  }, [])

  useEffect(() => {
    // Merged, not replaced: a refresh keeps the reader's zoom.
    chart.current?.setOption(withTimeLabels(option), { replaceMerge: ['series'] })
  }, [option])

  return <div ref={box} className="chart" style={{ height }} role="img" aria-label={label} />
}

/**
 * The labels of a time axis at each of its levels: the milliseconds after a
 * dot ("02:52:32.080"; ECharts' own writes "02:52:32 080"), 24-hour clock.
 */
const timeLabels = {
  year: '{yyyy}',
  month: '{MMM}',
  day: '{d} {MMM}',
  hour: '{HH}:{mm}',
  minute: '{HH}:{mm}',
  second: '{HH}:{mm}:{ss}',
  millisecond: '{HH}:{mm}:{ss}.{SSS}',
  none: '{yyyy}-{MM}-{dd} {HH}:{mm}:{ss}.{SSS}',
}

type Axis = { type?: string; axisLabel?: { formatter?: unknown } & Record<string, unknown> } & Record<string, unknown>

/** The option with timeLabels on each time axis whose labels have no formatter of the chart's own. */
function withTimeLabels(option: EChartsCoreOption): EChartsCoreOption {
  const fix = (a: unknown) => {
    const axis = a as Axis | undefined
    if (!axis || typeof axis !== 'object' || axis.type !== 'time' || axis.axisLabel?.formatter) return a
    return { ...axis, axisLabel: { ...axis.axisLabel, formatter: timeLabels } }
  }
  const x = option.xAxis
  if (x === undefined) return option
  return { ...option, xAxis: Array.isArray(x) ? x.map(fix) : fix(x) }
}
