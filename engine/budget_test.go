package engine

import (
	"math"
	"testing"
)

func TestCacheBudget(t *testing.T) {
	const most = 256 << 20
	for _, c := range []struct {
		name                string
		limit, live, cached int64
		want                int64
	}{
		{"no limit", math.MaxInt64, 900 << 20, 256 << 20, most},
		{"no limit set", 0, 900 << 20, 256 << 20, most},
		{"room to spare", 1000 << 20, 300 << 20, 200 << 20, most},
		{"the rest of the heap grows", 1000 << 20, 700 << 20, 256 << 20, 156 << 20}, // 600 MiB less the 444 of the rest
		{"the rest alone fills the share", 1000 << 20, 900 << 20, 100 << 20, most / minCacheShare},
		{"a cache estimated above the heap", 1000 << 20, 100 << 20, 200 << 20, most},
	} {
		if got := cacheBudget(most, c.limit, c.live, c.cached); got != c.want {
			t.Errorf("%s: cacheBudget(limit %d MiB, live %d MiB, cached %d MiB) = %d MiB, want %d MiB",
				c.name, c.limit>>20, c.live>>20, c.cached>>20, got>>20, c.want>>20)
		}
	}
}
