import { CustomChart, type CustomSeriesOption } from 'echarts/charts'
import { DataZoomComponent, GridComponent, TooltipComponent } from 'echarts/components'
import { graphic, use, type EChartsCoreOption } from 'echarts/core'
import { useMemo } from 'react'
import { EChart } from '../../components/EChart'
import { cssVar, useTheme } from '../../components/theme'
import { formatDuration, formatTime } from '../../components/timeFormat'
import type { BarStatus, Gantt as GanttData, GanttBar } from './gantt'

use([CustomChart, GridComponent, TooltipComponent, DataZoomComponent])

/** The CSS variable each bar status is drawn with. */
const colors: Record<BarStatus, string> = {
  completed: '--ok',
  failed: '--bad',
  timed_out: '--warn',
  canceled: '--neutral',
  scheduled: '--neutral-soft',
  running: '--info',
  backoff: '--warn-soft',
  timer: '--timer',
  signal: '--text',
}

/** Rows shown at once; more scroll with the slider at the right. */
const visibleRows = 20
const rowHeight = 28

/** The chart of a run's steps (an attempt a bar), timers and children; label says what it shows, when not that. */
export default function GanttChart({ gantt, label }: { gantt: GanttData; label?: string }) {
  const [theme] = useTheme()
  // The palette is read again when the theme changes.
  const palette = useMemo(() => readPalette(), [theme])
  const option = useMemo(() => chartOption(gantt, palette), [gantt, palette])
  const shown = Math.min(gantt.rows.length, visibleRows)
  return (
    <EChart
      option={option}
      height={shown * rowHeight + 70}
      label={
        label ??
        `Timeline of ${gantt.rows.length} steps, timers and children, ${gantt.bars.length} bars${signalsText(gantt)}; the table below lists them.`
      }
    />
  )
}

/** ", 2 signals (approve, go)": the signals the chart marks, if any. */
function signalsText(gantt: GanttData): string {
  const names = gantt.bars.filter((b) => b.status === 'signal').map((b) => b.label)
  if (names.length === 0) return ''
  return `, ${names.length} signal${names.length === 1 ? '' : 's'} (${names.join(', ')})`
}

interface Palette {
  surface: string
  raised: string
  highlight: string
  text: string
  muted: string
  line: string
  fill: Record<BarStatus, string>
}

/** The theme's colors, read from its CSS variables. */
function readPalette(): Palette {
  return {
    surface: cssVar('--surface'),
    raised: cssVar('--surface-2'),
    highlight: cssVar('--info-bg'),
    text: cssVar('--text'),
    muted: cssVar('--muted'),
    line: cssVar('--border'),
    fill: Object.fromEntries(Object.entries(colors).map(([k, v]) => [k, cssVar(v)])) as Record<BarStatus, string>,
  }
}

function chartOption(
  { rows, bars }: GanttData,
  { surface, raised, highlight, text, muted, line, fill }: Palette,
): EChartsCoreOption {
  const scroll = rows.length > visibleRows
  const slider = {
    type: 'slider',
    backgroundColor: raised,
    borderColor: line,
    fillerColor: highlight,
    handleStyle: { color: surface, borderColor: muted },
    moveHandleStyle: { color: line },
    textStyle: { color: muted },
  }
  const series: CustomSeriesOption = {
    type: 'custom',
    id: 'bars',
    encode: { x: [1, 2], y: 0 },
    data: bars.map((b, i) => ({ value: [b.row, b.start, b.end, i] })),
    renderItem: (params, api) => {
      const row = api.value(0) as number
      const from = api.coord([api.value(1), row])
      const to = api.coord([api.value(2), row])
      const bar = bars[api.value(3) as number]
      const height = (api.size?.([0, 1]) as number[])[1]! * 0.6
      const box = params.coordSys as unknown as { x: number; y: number; width: number; height: number }
      if (bar?.status === 'signal') {
        // A signal: a diamond where it arrived, and its name beside it.
        const [x, y] = [from[0]!, from[1]!]
        if (x < box.x || x > box.x + box.width) return null
        const r = height / 2
        return {
          type: 'group',
          children: [
            {
              type: 'polygon',
              shape: { points: [[x, y - r], [x + r, y], [x, y + r], [x - r, y]] },
              style: { fill: fill.signal, stroke: surface, lineWidth: 1 },
            },
            {
              type: 'text',
              style: { text: bar.label, x: x + r + 3, y, verticalAlign: 'middle', fill: text, font: '11px sans-serif' },
            },
          ],
        }
      }
      const shape = graphic.clipRectByRect(
        { x: from[0]!, y: from[1]! - height / 2, width: Math.max(to[0]! - from[0]!, 3), height },
        { x: box.x, y: box.y, width: box.width, height: box.height },
      )
      if (!shape || !bar) return null
      return {
        type: 'rect',
        shape: { ...shape, r: 2 },
        // The stroke parts a retry's bar from the attempt before it.
        style: { fill: fill[bar.status], stroke: surface, lineWidth: 1, opacity: bar.open ? 0.7 : 1 },
      }
    },
  }
  return {
    animation: false,
    grid: { left: 8, right: scroll ? 40 : 16, top: 8, bottom: 44, containLabel: true },
    tooltip: {
      trigger: 'item',
      confine: true,
      backgroundColor: raised,
      borderColor: line,
      textStyle: { color: text },
      formatter: (p: { dataIndex: number }) =>
        tooltip(rows[bars[p.dataIndex]?.row ?? 0]?.label ?? '', bars[p.dataIndex]),
    },
    xAxis: {
      type: 'time',
      axisLabel: { color: muted, hideOverlap: true },
      axisLine: { lineStyle: { color: line } },
      splitLine: { show: true, lineStyle: { color: line, opacity: 0.5 } },
    },
    yAxis: {
      type: 'category',
      inverse: true,
      data: rows.map((r) => r.label),
      axisLabel: { color: text, width: 220, overflow: 'truncate' },
      axisLine: { lineStyle: { color: line } },
      axisTick: { show: false },
    },
    dataZoom: [
      { type: 'inside', xAxisIndex: 0, filterMode: 'weakFilter' },
      { ...slider, xAxisIndex: 0, filterMode: 'weakFilter', height: 18, bottom: 8 },
      ...(scroll
        ? [
            {
              ...slider,
              yAxisIndex: 0,
              right: 8,
              width: 14,
              startValue: 0,
              endValue: visibleRows - 1,
              showDetail: false,
            },
          ]
        : []),
    ],
    series: [series],
  }
}

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)

function tooltip(row: string, b: GanttBar | undefined): string {
  if (!b) return ''
  const lines = [
    `<strong>${escape(row)}</strong>`,
    `${escape(b.label)}`,
    `${formatTime(new Date(b.start), true)} → ${b.open ? 'now' : formatTime(new Date(b.end), true)}`,
    `${formatDuration(b.end - b.start)}${b.open ? ' so far' : ''}`,
  ]
  if (b.status === 'signal') lines.splice(1, 3, `signal ${escape(b.label)}`, formatTime(new Date(b.start), true))
  if (b.detail) lines.push(`<span style="white-space:normal">${escape(b.detail)}</span>`)
  return `<div style="max-width:360px">${lines.join('<br>')}</div>`
}
