import { useEffect, useState } from 'react'

/**
 * The time now (ms since the epoch), renewed every everyMs: a component that
 * shows ages with it re-renders as they grow.
 */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs)
    return () => clearInterval(t)
  }, [everyMs])
  return now
}
