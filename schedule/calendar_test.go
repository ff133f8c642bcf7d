package schedule

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/store"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func times(ss ...string) []time.Time {
	out := make([]time.Time, len(ss))
	for i, s := range ss {
		out[i] = utc(s)
	}
	return out
}

func TestUpcoming(t *testing.T) {
	for _, c := range []struct {
		name string
		spec Spec
		from string
		want []time.Time
	}{
		{"every 15 minutes", Spec{Cron: []string{"*/15 * * * *"}}, "2026-01-02T10:07:30Z",
			times("2026-01-02T10:15:00Z", "2026-01-02T10:30:00Z", "2026-01-02T10:45:00Z")},
		{"a fire time is strictly after", Spec{Cron: []string{"*/15 * * * *"}}, "2026-01-02T10:15:00Z",
			times("2026-01-02T10:30:00Z", "2026-01-02T10:45:00Z", "2026-01-02T11:00:00Z")},
		{"seconds, weekdays", Spec{Cron: []string{"30 0 9 * * MON-FRI"}}, "2026-01-02T10:00:00Z", // a Friday
			times("2026-01-05T09:00:30Z", "2026-01-06T09:00:30Z", "2026-01-07T09:00:30Z")},
		{"@hourly", Spec{Cron: []string{"@hourly"}}, "2026-01-02T10:00:00Z",
			times("2026-01-02T11:00:00Z", "2026-01-02T12:00:00Z", "2026-01-02T13:00:00Z")},
		{"@every 90s from the epoch", Spec{Cron: []string{"@every 90s"}}, "2026-01-02T10:00:00Z",
			times("2026-01-02T10:01:30Z", "2026-01-02T10:03:00Z", "2026-01-02T10:04:30Z")},
		{"two specs, a shared time once", Spec{Cron: []string{"0 * * * *", "*/30 * * * *"}}, "2026-01-02T10:00:00Z",
			times("2026-01-02T10:30:00Z", "2026-01-02T11:00:00Z", "2026-01-02T11:30:00Z")},
		{"a time zone", Spec{Cron: []string{"0 9 * * *"}, TimeZone: "Europe/Berlin"}, "2026-01-02T10:00:00Z",
			times("2026-01-03T08:00:00Z", "2026-01-04T08:00:00Z", "2026-01-05T08:00:00Z")},
		{"summer time begins: 09:00 is an hour earlier in UTC", Spec{Cron: []string{"0 9 * * *"}, TimeZone: "Europe/Berlin"},
			"2026-03-28T10:00:00Z", times("2026-03-29T07:00:00Z", "2026-03-30T07:00:00Z", "2026-03-31T07:00:00Z")},
		{"start and end", Spec{Cron: []string{"@daily"}, Start: utc("2026-01-05T00:00:00Z"), End: utc("2026-01-07T00:00:00Z")},
			"2026-01-01T00:00:00Z", times("2026-01-05T00:00:00Z", "2026-01-06T00:00:00Z")},
	} {
		cal, err := Compile(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := cal.Upcoming(utc(c.from), 3); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestBetween(t *testing.T) {
	cal, err := Compile(Spec{Cron: []string{"@daily"}})
	if err != nil {
		t.Fatal(err)
	}
	// A backfill of ten days: the fire times after from, up to and with to.
	got := cal.Between(utc("2026-01-01T00:00:00Z"), utc("2026-01-11T00:00:00Z"), 100)
	if len(got) != 10 || !got[0].Equal(utc("2026-01-02T00:00:00Z")) || !got[9].Equal(utc("2026-01-11T00:00:00Z")) {
		t.Fatalf("ten days: %v", got)
	}
	if got := cal.Between(utc("2026-01-01T00:00:00Z"), utc("2026-01-11T00:00:00Z"), 3); len(got) != 3 {
		t.Fatalf("limit 3: %v", got)
	}
}

func TestJitter(t *testing.T) {
	cal, err := Compile(Spec{Cron: []string{"* * * * *"}, Jitter: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	at := utc("2026-01-02T10:00:00Z")
	seen := map[time.Duration]bool{}
	for m := range 100 {
		fire := at.Add(time.Duration(m) * time.Minute)
		j := cal.Jittered("s1", fire)
		if d := j.Sub(fire); d < 0 || d >= 10*time.Second {
			t.Fatalf("jitter %s out of [0, 10s)", d)
		} else {
			seen[d] = true
		}
		if !cal.Jittered("s1", fire).Equal(j) {
			t.Fatal("jitter differs for the same schedule and time")
		}
	}
	if len(seen) < 50 {
		t.Errorf("jitter takes %d values in 100 fires", len(seen))
	}
	plain, _ := Compile(Spec{Cron: []string{"* * * * *"}})
	if !plain.Jittered("s1", at).Equal(at) {
		t.Error("no jitter moved the time")
	}
}

func TestCompileRefuses(t *testing.T) {
	for _, c := range []struct {
		spec        Spec
		field, want string
	}{
		{Spec{}, "cron", "at least one"},
		{Spec{Cron: []string{"@daily", "61 * * * *"}}, "cron[1]", "61"},
		{Spec{Cron: []string{"* * *"}}, "cron[0]", "expected"},
		{Spec{Cron: []string{"0 0 30 2 *"}}, "cron[0]", "no time"},
		{Spec{Cron: []string{"@every 1.5s"}}, "cron[0]", "whole number"},
		{Spec{Cron: []string{"@every soon"}}, "cron[0]", "@every"},
		{Spec{Cron: []string{"CRON_TZ=UTC * * * * *"}}, "cron[0]", "time_zone"},
		{Spec{Cron: []string{"@daily"}, TimeZone: "Mars/Olympus"}, "time_zone", "IANA"},
		{Spec{Cron: []string{"@daily"}, TimeZone: "Local"}, "time_zone", "IANA"},
		{Spec{Cron: []string{"@daily"}, Start: utc("2026-01-02T00:00:00Z"), End: utc("2026-01-01T00:00:00Z")}, "end", "not after"},
		{Spec{Cron: []string{"@daily"}, Jitter: -time.Second}, "jitter", "0 to"},
		{Spec{Cron: make([]string, MaxCron+1)}, "cron", "at most"},
	} {
		_, err := Compile(c.spec)
		var ia *store.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != c.field || !strings.Contains(err.Error(), c.want) || !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Compile(%+v): %v; want field %s saying %q", c.spec, err, c.field, c.want)
		}
	}
}
