/**
 * A share as a percentage: "100%", "97%", "99.6%", "0.4%". Whole percents,
 * but tenths near all and none, so that only all is 100% and only none 0%.
 */
export function formatPercent(rate: number): string {
  const p = rate * 100
  if (p <= 0 || p >= 100) return `${Math.round(p)}%`
  if (p < 1 || p >= 99.5) return `${Math.min(99.9, Math.max(0.1, p)).toFixed(1)}%`
  return `${Math.round(p)}%`
}
