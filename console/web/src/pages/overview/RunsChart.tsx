import { BarChart, LineChart, type BarSeriesOption, type LineSeriesOption } from 'echarts/charts'
import { GridComponent, MarkAreaComponent, TooltipComponent } from 'echarts/components'
import { use, type EChartsCoreOption } from 'echarts/core'
import { useMemo } from 'react'
import { EChart } from '../../components/EChart'
import { cssVar, useTheme } from '../../components/theme'
import { formatTime, zoneName } from '../../components/timeFormat'
import { chartSeries, type MinutePoint } from './overview'

use([BarChart, LineChart, GridComponent, TooltipComponent, MarkAreaComponent])

interface RunsChartProps {
  /** The minutes, the oldest first. */
  points: MinutePoint[]
  /** When counting started, if within the hour: the minutes before have no counts. */
  since: Date | undefined
  /** What the chart shows, for those who cannot see it. */
  label: string
}

/** Runs started, completed and failed per minute over the last hour. */
export default function RunsChart({ points, since, label }: RunsChartProps) {
  const [theme] = useTheme()
  // The palette is read again when the theme changes.
  const palette = useMemo(() => readPalette(), [theme])
  const option = useMemo(() => chartOption(points, since, palette), [points, since, palette])
  return <EChart option={option} height={260} label={label} />
}

interface Palette {
  raised: string
  text: string
  muted: string
  line: string
  series: string[]
}

/** The theme's colors, read from its CSS variables. */
function readPalette(): Palette {
  return {
    raised: cssVar('--surface-2'),
    text: cssVar('--text'),
    muted: cssVar('--muted'),
    line: cssVar('--border'),
    series: chartSeries.map((s) => cssVar(s.color)),
  }
}

/** "14:03". */
const hhmm = (t: number) => formatTime(new Date(t)).slice(11, 16)

function chartOption(points: MinutePoint[], since: Date | undefined, p: Palette): EChartsCoreOption {
  const first = points[0]?.time ?? 0
  const last = points.at(-1)?.time ?? 0
  // The minutes before counting started are shaded: no counts, not no runs.
  const uncounted: BarSeriesOption['markArea'] = {
    silent: true,
    itemStyle: { color: p.raised, opacity: 0.9 },
    label: {
      show: since !== undefined && since.getTime() - first >= 10 * 60_000,
      position: 'insideTop',
      color: p.muted,
      formatter: 'not counted',
    },
    data: since ? [[{ xAxis: first }, { xAxis: Math.min(since.getTime(), last) }]] : [],
  }
  // A minute over before counting started has no value: a gap, not a zero.
  const counted = (m: MinutePoint) => !since || m.time + 60_000 > since.getTime()
  const series: (BarSeriesOption | LineSeriesOption)[] = chartSeries.map((s, i) => {
    const data = points.map((m) => [m.time, counted(m) ? m[s.key] : null])
    if (s.key === 'started') {
      return {
        type: 'bar',
        id: s.key,
        name: s.label,
        data,
        color: p.series[i],
        itemStyle: { opacity: 0.75 },
        barMaxWidth: 14,
        emphasis: { disabled: true },
        markArea: uncounted,
      }
    }
    return {
      type: 'line',
      id: s.key,
      name: s.label,
      data,
      color: p.series[i],
      symbol: s.symbol,
      symbolSize: 6,
      lineStyle: { width: 2 },
      emphasis: { disabled: true },
    }
  })
  return {
    animation: false,
    grid: { left: 8, right: 16, top: 12, bottom: 8, containLabel: true },
    tooltip: {
      trigger: 'axis',
      confine: true,
      backgroundColor: p.raised,
      borderColor: p.line,
      textStyle: { color: p.text },
      axisPointer: { type: 'line', lineStyle: { color: p.muted } },
      formatter: (params: { marker: string; seriesName: string; value: [number, number | null] }[]) => {
        const t = params[0]?.value[0]
        if (t === undefined) return ''
        const rows = params.map((s) => `${s.marker}${s.seriesName}: <strong>${s.value[1] ?? 'not counted'}</strong>`)
        return [`${hhmm(t)}–${hhmm(t + 60_000)} ${zoneName(new Date(t))}`, ...rows].join('<br>')
      },
    },
    xAxis: {
      type: 'time',
      min: first,
      max: last,
      axisLabel: { color: p.muted, hideOverlap: true, formatter: (t: number) => hhmm(t) },
      axisLine: { lineStyle: { color: p.line } },
      splitLine: { show: false },
    },
    yAxis: {
      type: 'value',
      minInterval: 1,
      axisLabel: { color: p.muted },
      splitLine: { lineStyle: { color: p.line, opacity: 0.6 } },
    },
    series,
  }
}
