// Package schedule starts workflows on a calendar. A schedule is a run of
// the workflow WorkflowType (Run) in its namespace, which the system
// worker runs (package system); Service is its api.Schedules over an
// api.Service. Compile reads a schedule's calendar: cron expressions and
// intervals in a time zone, inside a start and end time, each fire time
// delayed by a jitter that depends only on the schedule and the time.
// Every answer of a Calendar is a function of the spec and the times asked
// about, never of when it is asked, so every node of a cluster, and a node
// that restarts, finds the same fire times.
package schedule

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	_ "time/tzdata" // time zones in the binary, for machines without a zoneinfo database

	"github.com/robfig/cron/v3"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Spec is when a schedule fires.
type Spec = api.ScheduleSpec

// MaxJitter bounds Spec.Jitter.
const MaxJitter = 24 * time.Hour

// MaxCron bounds the expressions of a spec.
const MaxCron = 32

// parser reads the expressions: seconds optional, names allowed.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Calendar is a compiled Spec.
type Calendar struct {
	spec  Spec
	loc   *time.Location
	specs []cron.Schedule // cron expressions, in loc
	every []time.Duration // intervals
}

// Compile checks a spec and returns its calendar. A bad spec is a
// store.InvalidArgumentError naming the field ("cron[1]", "time_zone",
// "end", "jitter").
func Compile(s Spec) (*Calendar, error) {
	if len(s.Cron) == 0 {
		return nil, store.InvalidArgument("cron", "empty: a schedule needs at least one expression")
	}
	if len(s.Cron) > MaxCron {
		return nil, store.InvalidArgument("cron", "%d expressions; at most %d", len(s.Cron), MaxCron)
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil || s.TimeZone == "Local" {
		return nil, store.InvalidArgument("time_zone", "%q is not an IANA time zone (such as Europe/Berlin or UTC)", s.TimeZone)
	}
	if !s.Start.IsZero() && !s.End.IsZero() && !s.End.After(s.Start) {
		return nil, store.InvalidArgument("end", "%s is not after the start, %s", s.End.Format(time.RFC3339), s.Start.Format(time.RFC3339))
	}
	if s.Jitter < 0 || s.Jitter > MaxJitter {
		return nil, store.InvalidArgument("jitter", "%s; want 0 to %s", s.Jitter, MaxJitter)
	}
	c := &Calendar{spec: s, loc: loc}
	for i, expr := range s.Cron {
		field := fmt.Sprintf("cron[%d]", i)
		expr = strings.TrimSpace(expr)
		if rest, ok := strings.CutPrefix(expr, "@every"); ok {
			d, err := time.ParseDuration(strings.TrimSpace(rest))
			if err != nil || d < time.Second || d%time.Second != 0 {
				return nil, store.InvalidArgument(field, "%q: @every takes a whole number of seconds, at least 1s (such as @every 90s)", s.Cron[i])
			}
			c.every = append(c.every, d)
			continue
		}
		if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
			return nil, store.InvalidArgument(field, "%q: give the time zone as time_zone, not in the expression", s.Cron[i])
		}
		sched, err := parser.Parse(expr)
		if err != nil {
			return nil, store.InvalidArgument(field, "%q: %v", s.Cron[i], err)
		}
		if ss, ok := sched.(*cron.SpecSchedule); ok {
			ss.Location = loc
		}
		// The parser searches five years ahead: a day that never comes
		// (the 30th of February) finds nothing.
		if sched.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, loc)).IsZero() {
			return nil, store.InvalidArgument(field, "%q names no time that exists", s.Cron[i])
		}
		c.specs = append(c.specs, sched)
	}
	return c, nil
}

// Unbounded returns the calendar without its start and end (a backfill's
// range replaces them).
func (c *Calendar) Unbounded() *Calendar {
	u := *c
	u.spec.Start, u.spec.End = time.Time{}, time.Time{}
	return &u
}

// Spec returns the spec the calendar was compiled from.
func (c *Calendar) Spec() Spec { return c.spec }

// Next returns the first fire time strictly after t, or the zero time if
// there is none (the end is reached). Fire times are whole seconds.
func (c *Calendar) Next(t time.Time) time.Time {
	if !c.spec.Start.IsZero() && t.Before(c.spec.Start) {
		// The first fire time at or after the start.
		t = c.spec.Start.Add(-time.Nanosecond)
	}
	var next time.Time
	for _, s := range c.specs {
		n := s.Next(t.In(c.loc))
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	for _, d := range c.every {
		// The first multiple of d after t, counted from the Unix epoch.
		step := int64(d / time.Second)
		sec := t.Unix()
		n := (sec/step + 1) * step
		if sec < 0 && sec%step != 0 {
			n -= step
		}
		if at := time.Unix(n, 0); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if next.IsZero() || !c.spec.End.IsZero() && !next.Before(c.spec.End) {
		return time.Time{}
	}
	return next.UTC()
}

// Between returns the fire times after from and at or before to, in order,
// at most limit of them (the earliest).
func (c *Calendar) Between(from, to time.Time, limit int) []time.Time {
	var out []time.Time
	for t := c.Next(from); !t.IsZero() && !t.After(to) && len(out) < limit; t = c.Next(t) {
		out = append(out, t)
	}
	return out
}

// Upcoming returns the next n fire times after t.
func (c *Calendar) Upcoming(t time.Time, n int) []time.Time {
	return c.Between(t, time.Unix(1<<62, 0), n)
}

// Jittered returns when the fire of a schedule at a fire time happens: the
// time plus a delay under the spec's jitter that depends only on the
// schedule's id and the time.
func (c *Calendar) Jittered(scheduleID string, at time.Time) time.Time {
	if c.spec.Jitter <= 0 {
		return at
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d", scheduleID, at.UnixNano())
	return at.Add(time.Duration(h.Sum64() % uint64(c.spec.Jitter)))
}
