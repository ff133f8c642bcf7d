package dag_test

import (
	"maps"
	"testing"
	"time"

	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/dag/param"
)

// TestBusinessTimeZone: an instance's time expressions and system
// parameters are computed in its time zone, not in UTC.
func TestBusinessTimeZone(t *testing.T) {
	for _, c := range []struct {
		zone string
		fire time.Time
		want map[string]string
		prev string // $[yyyyMMdd-1]
	}{
		// 2026-01-02 02:00 in Shanghai.
		{"Asia/Shanghai", time.Date(2026, 1, 1, 18, 0, 0, 0, time.UTC),
			map[string]string{"system.biz.date": "20260101", "system.biz.curdate": "20260102", "system.datetime": "20260102020000"}, "20260101"},
		// 2026-03-08 23:30 in Los Angeles, the day it changed to daylight
		// saving time (UTC-7).
		{"America/Los_Angeles", time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC),
			map[string]string{"system.biz.date": "20260307", "system.biz.curdate": "20260308", "system.datetime": "20260308233000"}, "20260307"},
		// No zone: UTC.
		{"", time.Date(2026, 1, 1, 18, 0, 0, 0, time.UTC),
			map[string]string{"system.biz.date": "20251231", "system.biz.curdate": "20260101", "system.datetime": "20260101180000"}, "20251231"},
	} {
		in := dag.RunInput{DAG: "d", TimeZone: c.zone}
		if err := in.Check(); err != nil {
			t.Fatalf("%q: %v", c.zone, err)
		}
		base, err := in.BusinessTime(c.fire)
		if err != nil {
			t.Fatalf("%q: %v", c.zone, err)
		}
		if got := param.Builtins(base); !maps.Equal(got, c.want) {
			t.Errorf("%q: the system parameters at %s are %v; want %v", c.zone, c.fire, got, c.want)
		}
		if got, err := param.Expand("$[yyyyMMdd-1]", nil, base); err != nil || got != c.prev {
			t.Errorf("%q: $[yyyyMMdd-1] at %s is %q, %v; want %q", c.zone, c.fire, got, err, c.prev)
		}
	}
	for _, bad := range []string{"Mars/Olympus", "Local"} {
		if err := (dag.RunInput{DAG: "d", TimeZone: bad}).Check(); err == nil {
			t.Errorf("time zone %q was accepted", bad)
		}
	}
}
