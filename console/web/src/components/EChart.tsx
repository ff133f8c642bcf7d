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
    chart.current?.setOption(option, { replaceMerge: ['series'] })
  }, [option])

  return <div ref={box} className="chart" style={{ height }} role="img" aria-label={label} />
}
