package schedule_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/internal/testenv"
	"github.com/strandhq/strand/schedule"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// jobInput says how the scheduled workflow behaves.
type jobInput struct {
	// Hold keeps the run open until it gets the signal "finish" (or is
	// canceled).
	Hold bool `json:"hold,omitempty"`
	// Sleep keeps the run open this long.
	Sleep time.Duration `json:"sleep,omitempty"`
}

// Job is the workflow the schedules start: it returns its fire time.
func Job(ctx workflow.Context, in jobInput) (time.Time, error) {
	if in.Sleep > 0 {
		if err := workflow.Sleep(ctx, in.Sleep); err != nil {
			return time.Time{}, err
		}
	}
	if in.Hold {
		sel := workflow.NewSelector(ctx)
		workflow.AddReceive(sel, workflow.GetSignalChannel[struct{}](ctx, "finish"), func(ch workflow.ReceiveChannel[struct{}]) { ch.Receive(ctx) })
		workflow.AddReceive(sel, ctx.Done(), func(ch workflow.ReceiveChannel[struct{}]) { ch.Receive(ctx) })
		sel.Select(ctx)
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
	}
	return workflow.ScheduledTime(ctx), nil
}

// env is an engine over a store with the system worker and a worker
// running Job.
type env struct{ *testenv.Env }

func newEnv(t *testing.T, st store.Store) *env {
	return &env{testenv.New(t, st, 3*time.Minute, func(w *worker.Worker) { worker.RegisterWorkflow(w, Job) })}
}

// sch is the schedules of the engine running now.
func (e *env) sch() *schedule.Service { return schedule.NewService(e.Engine) }

// create creates a schedule of Job.
func (e *env) create(id string, sc api.Schedule) {
	e.T.Helper()
	if sc.Action.WorkflowType == "" {
		sc.Action.WorkflowType = "Job"
	}
	if err := e.sch().CreateSchedule(e.Ctx, api.CreateScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: id}, Schedule: sc, Identity: "tester"}); err != nil {
		e.T.Fatalf("create %s: %v", id, err)
	}
}

func (e *env) describe(id string) api.ScheduleDescription {
	e.T.Helper()
	d, err := e.sch().DescribeSchedule(e.Ctx, api.ScheduleRef{ScheduleID: id})
	if err != nil {
		e.T.Fatalf("describe %s: %v", id, err)
	}
	return d
}

// runs returns the runs a schedule started, by start time.
func (e *env) runs(id string) []store.VisibilityRecord {
	e.T.Helper()
	var out []store.VisibilityRecord
	req := api.ListRequest{Attributes: map[string]string{api.AttributeSchedule: id}, PageSize: 1000}
	for {
		page, err := e.Client.List(e.Ctx, req)
		if err != nil {
			e.T.Fatal(err)
		}
		out = append(out, page.Runs...)
		if len(page.NextPageToken) == 0 {
			break
		}
		req.PageToken = page.NextPageToken
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkflowID < out[j].WorkflowID })
	return out
}

func open(runs []store.VisibilityRecord) []string {
	var out []string
	for _, r := range runs {
		if r.Status == store.StatusRunning {
			out = append(out, r.WorkflowID)
		}
	}
	return out
}

// on returns the view of e for subtest t.
func (e *env) on(t *testing.T) *env {
	c := *e.Env
	c.T = t
	return &env{&c}
}

// eventually polls cond until it holds or 30 seconds pass.
func (e *env) eventually(what string, cond func() bool) {
	e.T.Helper()
	// A bound, not a wait: a loaded CI machine once took over 30 s to see
	// an every-second schedule fire after a restart on PostgreSQL.
	e.Eventually(what, time.Minute, cond)
}

func (e *env) trigger(id string) {
	e.T.Helper()
	if err := e.sch().TriggerSchedule(e.Ctx, api.TriggerScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: id}, Identity: "tester"}); err != nil {
		e.T.Fatalf("trigger %s: %v", id, err)
	}
}

func (e *env) finish(workflowID string) {
	e.T.Helper()
	if err := e.Client.Signal(e.Ctx, workflowID, "", "finish", struct{}{}); err != nil {
		e.T.Fatalf("finish %s: %v", workflowID, err)
	}
}

// yearly fires once a year: the overlap tests trigger their fires.
var yearly = api.ScheduleSpec{Cron: []string{"0 0 1 1 *"}}

func hold() api.Value { return api.Value(`{"hold":true}`) }

// TestOverlapPolicies triggers three actions while the first run is open,
// under each policy, and checks what started and when.
func TestOverlapPolicies(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		// The policies' subtests run side by side, each on a schedule of
		// its own: they mostly wait for the scheduler and the runs, and
		// t.Parallel would not run them at once (it counts them against
		// -parallel, GOMAXPROCS by default, which the stores fill).
		e := newEnv(t, st)
		var wg sync.WaitGroup
		for _, p := range api.OverlapPolicies {
			wg.Go(func() { t.Run(string(p), func(t *testing.T) { overlap(t, e.on(t), p) }) })
		}
		wg.Wait()
	})
}

// overlap is TestOverlapPolicies' subtest of policy p.
func overlap(t *testing.T, e *env, p api.OverlapPolicy) {
	id := "overlap-" + string(p)
	e.create(id, api.Schedule{Spec: yearly, Action: api.ScheduleAction{Input: hold()}, Policies: api.SchedulePolicies{Overlap: p}})
	e.trigger(id)
	e.eventually("the first run", func() bool { return len(open(e.runs(id))) == 1 })
	first := open(e.runs(id))[0]
	e.trigger(id)
	e.trigger(id)
	d := e.describe(id)
	switch p {
	case api.OverlapSkip:
		if d.Skipped != 2 || d.Buffered != 0 {
			t.Fatalf("skip: skipped %d, buffered %d; want 2, 0", d.Skipped, d.Buffered)
		}
		e.finish(first)
		e.eventually("the run closed", func() bool { return len(open(e.runs(id))) == 0 })
		if n := len(e.runs(id)); n != 1 {
			t.Fatalf("skip: %d runs; want 1", n)
		}
	case api.OverlapBufferOne, api.OverlapBufferAll:
		want := 3
		if p == api.OverlapBufferOne {
			want = 2
			if d.Buffered != 1 || d.Skipped != 1 {
				t.Fatalf("buffer_one: buffered %d, skipped %d; want 1, 1", d.Buffered, d.Skipped)
			}
		} else if d.Buffered != 2 {
			t.Fatalf("buffer_all: buffered %d; want 2", d.Buffered)
		}
		// One at a time: each buffered fire starts when the run before closes.
		for n := 1; n <= want; n++ {
			e.eventually(fmt.Sprintf("run %d", n), func() bool { return len(e.runs(id)) == n && len(open(e.runs(id))) == 1 })
			e.finish(open(e.runs(id))[0])
		}
		e.eventually("all closed", func() bool { return len(open(e.runs(id))) == 0 })
		// No run starts after the last closed: a moment for one to show.
		time.Sleep(200 * time.Millisecond)
		if n := len(e.runs(id)); n != want {
			t.Fatalf("%s: %d runs; want %d", p, n, want)
		}
	case api.OverlapCancelOther, api.OverlapTerminateOther:
		status := store.StatusCanceled
		if p == api.OverlapTerminateOther {
			status = store.StatusTerminated
		}
		// The open run is stopped, and the last fire replaces a
		// fire still waiting: the third trigger's run is the one
		// left open (the second's ran if its run started before
		// the third came).
		e.eventually("the last run", func() bool {
			o := open(e.runs(id))
			return len(o) == 1 && strings.HasSuffix(o[0], "-trigger-3")
		})
		// Every fire ran (and was stopped) or was skipped.
		e.eventually("three fires accounted for", func() bool {
			return e.describe(id).Skipped+int64(len(e.runs(id))) == 3
		})
		runs := e.runs(id)
		for _, r := range runs {
			if r.Status != store.StatusRunning && r.Status != status {
				t.Fatalf("%s: run %s %s; want %s", p, r.WorkflowID, r.Status, status)
			}
		}
		e.finish(open(runs)[0])
	case api.OverlapAllowAll:
		e.eventually("three open runs", func() bool { return len(open(e.runs(id))) == 3 })
		for _, r := range open(e.runs(id)) {
			e.finish(r)
		}
	}
	e.eventually("describe shows every run closed", func() bool {
		d := e.describe(id)
		return len(d.Running) == 0 && d.Buffered == 0 && len(d.Recent) == len(e.runs(id))
	})
	for _, r := range e.describe(id).Recent {
		if r.RunID == "" || r.Status == api.ActionStarting || r.Status == store.StatusRunning.String() {
			t.Fatalf("%s: recent action %+v", p, r)
		}
	}
}

// TestCatchUp stops the server across fire times of schedules firing
// every second, and across the one fire time of daily schedules, under
// each catch-up policy. With all, the missed fires within the catch-up
// window are taken, each second exactly once, and those older are not;
// with latest (the default), only the latest missed fire is taken and the
// others count as missed, not as skipped by the overlap policy; with none,
// a fire that came due while down is missed.
func TestCatchUp(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)
		every := api.ScheduleSpec{Cron: []string{"@every 1s"}}
		e.create("every-second", api.Schedule{Spec: every,
			Policies: api.SchedulePolicies{Overlap: api.OverlapAllowAll, CatchupWindow: time.Minute, Catchup: api.CatchupAll}})
		e.create("short-window", api.Schedule{Spec: every,
			Policies: api.SchedulePolicies{Overlap: api.OverlapAllowAll, CatchupWindow: time.Second, Catchup: api.CatchupAll}})
		e.create("latest", api.Schedule{Spec: every, Policies: api.SchedulePolicies{Overlap: api.OverlapAllowAll}})
		// The schedule: every default (skip, latest).
		e.create("defaults", api.Schedule{Spec: every})
		e.eventually("two fires", func() bool { return len(e.runs("every-second")) >= 2 })
		skippedBefore := e.describe("defaults").Skipped
		// Daily schedules whose one fire time, at, comes while the
		// server is down: created again, under new ids, until the stop
		// comes well before at (on a loaded machine creating takes long).
		var at time.Time
		once := map[api.CatchupPolicy]string{}
		for attempt := 0; ; attempt++ {
			at = time.Now().UTC().Truncate(time.Second).Add(4 * time.Second)
			daily := api.ScheduleSpec{Cron: []string{fmt.Sprintf("%d %d %d * * *", at.Second(), at.Minute(), at.Hour())}}
			for _, p := range api.CatchupPolicies {
				once[p] = fmt.Sprintf("once-%s-%d", p, attempt)
				e.create(once[p], api.Schedule{Spec: daily, Policies: api.SchedulePolicies{Catchup: p}})
			}
			if time.Until(at) > 1500*time.Millisecond {
				break
			}
			if attempt == 5 {
				t.Fatalf("the daily schedules were created %s before their fire time, six times; want the server stopped before it", time.Until(at))
			}
			for _, id := range once {
				if err := e.sch().DeleteSchedule(e.Ctx, api.DeleteScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: id}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		e.Stop()
		down := time.Now()
		// Down until OnTimeGrace and half a second after at, and at least
		// 2.5s: the scheduler last took a fire W no later than the
		// stop, and runs again more than 2.5s later; by then W+1s is more
		// than the short window's 1s late (by 0.5s and the restart), so
		// it is missed however the fire times fall; at is late for none.
		time.Sleep(max(2500*time.Millisecond, time.Until(at.Add(api.OnTimeGrace+500*time.Millisecond))))
		e.Start()
		up := time.Now()
		// Daily: latest and all take the fire late; none counts it missed.
		for _, p := range []api.CatchupPolicy{api.CatchupLatest, api.CatchupAll} {
			id := once[p]
			e.eventually(id+": the late fire's run", func() bool { return len(e.runs(id)) == 1 })
			if r := e.runs(id)[0]; !fireTime(t, r).Equal(at) {
				t.Fatalf("%s: ran %s; want the fire at %s", id, r.WorkflowID, at)
			}
			if d := e.describe(id); d.Missed != 0 || d.Actions != 1 {
				t.Fatalf("%s: missed %d, actions %d; want 0, 1", id, d.Missed, d.Actions)
			}
		}
		none := once[api.CatchupNone]
		e.eventually(none+": the fire counted missed", func() bool { return e.describe(none).Missed == 1 })
		if d, runs := e.describe(none), e.runs(none); len(runs) != 0 || d.Actions != 0 {
			t.Fatalf("%s: %d runs, %d actions after a fire missed while down; want none", none, len(runs), d.Actions)
		}
		// On a time-out, what the schedule itself says (its actions and
		// next fires) tells a scheduler that stopped firing from runs the
		// list has not caught up with.
		for deadline := time.Now().Add(time.Minute); ; {
			runs := e.runs("every-second")
			if len(runs) > 0 && fireTime(t, runs[len(runs)-1]).After(up.Add(time.Second)) {
				break
			}
			if time.Now().After(deadline) {
				d := e.describe("every-second")
				last := "none"
				if len(runs) > 0 {
					last = runs[len(runs)-1].WorkflowID
				}
				t.Fatalf("timed out waiting for fires after the restart at %s: %d runs listed, the last %s; the schedule: %d actions, %d missed, %d skipped, %d running, %d buffered, next fires %v, recent %+v",
					up.Format(time.StampMilli), len(runs), last, d.Actions, d.Missed, d.Skipped, len(d.Running), d.Buffered, d.NextFires[:min(3, len(d.NextFires))], d.Recent[max(0, len(d.Recent)-3):])
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The list is visibility, written after each run starts: on a
		// loaded machine a fire's run can be listed after a later one's.
		// So a gap is waited out (a fire missed for good times out), and
		// two fires less than a second apart fail.
		var runs []store.VisibilityRecord
		e.eventually("every second's fire listed once, with no gap", func() bool {
			runs = e.runs("every-second")
			gap := false
			for i := 1; i < len(runs); i++ {
				got := fireTime(t, runs[i]).Sub(fireTime(t, runs[i-1]))
				if got < time.Second {
					t.Fatalf("fires %s and %s are %s apart; want every second exactly once", runs[i-1].WorkflowID, runs[i].WorkflowID, got)
				}
				gap = gap || got > time.Second
			}
			return !gap
		})
		// Each run saw its own fire time.
		for _, r := range runs {
			res, err := e.Client.Result(e.Ctx, r.WorkflowID, r.RunID)
			if err != nil {
				t.Fatal(err)
			}
			var at time.Time
			if err := json.Unmarshal(res.Output, &at); err != nil || !at.Equal(fireTime(t, r)) {
				t.Fatalf("%s saw scheduled time %s (%v)", r.WorkflowID, res.Output, err)
			}
		}
		// latest: the fires that came due while down but the last are
		// missed, the seconds missing from its runs, none skipped.
		e.eventually("latest: the runs after the restart listed, the gap's seconds counted missed", func() bool {
			lat := e.runs("latest")
			if len(lat) == 0 || !fireTime(t, lat[len(lat)-1]).After(up.Add(time.Second)) {
				return false
			}
			var gaps int64
			for i := 1; i < len(lat); i++ {
				gaps += int64(fireTime(t, lat[i]).Sub(fireTime(t, lat[i-1]))/time.Second) - 1
			}
			return gaps == e.describe("latest").Missed
		})
		if d := e.describe("latest"); d.Missed < 2 || d.Skipped != 0 {
			t.Fatalf("latest: missed %d, skipped %d after %s down; want at least 2 missed and none skipped", d.Missed, d.Skipped, up.Sub(down).Round(time.Second))
		}
		// defaults: the same under the overlap policy skip, which counted
		// them skipped before the catch-up policy. (A busy machine's
		// slow runs make later fires skipped as overlaps too, rightly:
		// how many is not the downtime's.)
		e.eventually("defaults: the fires while down counted missed", func() bool { return e.describe("defaults").Missed >= 2 })
		d0 := e.describe("defaults")
		t.Logf("defaults: %d missed, %d skipped (overlap) since before the stop", d0.Missed, d0.Skipped-skippedBefore)
		// The short window dropped the fires more than 1s late.
		d := e.describe("short-window")
		if d.Missed < 1 {
			t.Fatalf("short window: missed %d after %s down; want at least 1", d.Missed, time.Since(down).Round(time.Second))
		}
		// Its fires after the restart listed (see above): a gap before
		// them shows the missed fires skipped.
		var short []store.VisibilityRecord
		e.eventually("a fire of the short window listed after the restart", func() bool {
			short = e.runs("short-window")
			return len(short) > 0 && fireTime(t, short[len(short)-1]).After(up)
		})
		for i := 1; i < len(short); i++ {
			if fireTime(t, short[i]).Sub(fireTime(t, short[i-1])) > time.Second {
				return // a gap: the missed fires were skipped
			}
		}
		t.Fatalf("short window: no gap in %d runs", len(short))
	})
}

func fireTime(t *testing.T, r store.VisibilityRecord) time.Time {
	t.Helper()
	const n = len("2006-01-02T15:04:05Z")
	at, err := time.Parse(time.RFC3339, r.WorkflowID[max(0, len(r.WorkflowID)-n):])
	if err != nil {
		t.Fatalf("workflow id %s: %v", r.WorkflowID, err)
	}
	return at
}

// TestBackfill backfills ten days of a daily schedule, one run after
// another and three at a time; each run sees its own day.
func TestBackfill(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		pars := []int{0, 3}
		// The two backfills, of two schedules, run at the same time: each
		// mostly waits for its runs' sleeps.
		for _, par := range pars {
			id := fmt.Sprintf("daily-%d", par)
			e.create(id, api.Schedule{Spec: api.ScheduleSpec{Cron: []string{"@daily"}}, Action: api.ScheduleAction{Input: api.Value(`{"sleep":300000000}`)}})
			if err := e.sch().BackfillSchedule(e.Ctx, api.BackfillScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: id},
				Start: from, End: from.AddDate(0, 0, 10), Parallelism: par, Identity: "tester"}); err != nil {
				t.Fatal(err)
			}
		}
		for _, par := range pars {
			id := fmt.Sprintf("daily-%d", par)
			e.eventually(id+": ten closed runs", func() bool {
				runs := e.runs(id)
				return len(runs) == 10 && len(open(runs)) == 0
			})
			runs := e.runs(id)
			for i, r := range runs {
				day := from.AddDate(0, 0, i)
				if !fireTime(t, r).Equal(day) {
					t.Fatalf("%s: run %d is %s; want day %s", id, i, r.WorkflowID, day)
				}
				res, err := e.Client.Result(e.Ctx, r.WorkflowID, r.RunID)
				if err != nil {
					t.Fatal(err)
				}
				var at time.Time
				if err := json.Unmarshal(res.Output, &at); err != nil || !at.Equal(day) {
					t.Fatalf("%s saw scheduled time %s (%v); want %s", r.WorkflowID, res.Output, err, day)
				}
			}
			if most := mostOpen(runs); par == 0 && most != 1 || par == 3 && (most < 2 || most > 3) {
				t.Fatalf("%s: at most %d runs open at once", id, most)
			}
			e.eventually("the backfill is done", func() bool { return len(e.describe(id).Backfills) == 0 })
			if d := e.describe(id); d.Backfilled != 10 || d.Actions != 0 {
				t.Fatalf("%s: backfilled %d, actions %d; want 10, 0", id, d.Backfilled, d.Actions)
			}
		}
	})
}

// mostOpen is the largest number of runs open at one time.
func mostOpen(runs []store.VisibilityRecord) int {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, r := range runs {
		edges = append(edges, edge{r.StartTime, 1}, edge{r.CloseTime, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].d < edges[j].d
		}
		return edges[i].at.Before(edges[j].at)
	})
	n, most := 0, 0
	for _, x := range edges {
		n += x.d
		most = max(most, n)
	}
	return most
}

// TestPauseTriggerLimit pauses and unpauses a schedule firing every second,
// triggers one, and stops a schedule at its action limit.
func TestPauseTriggerLimit(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, st)
		ref := api.ScheduleRef{ScheduleID: "pausing"}
		e.create(ref.ScheduleID, api.Schedule{Spec: api.ScheduleSpec{Cron: []string{"@every 1s"}}})
		e.create("limited", api.Schedule{Spec: api.ScheduleSpec{Cron: []string{"@every 1s"}}, ActionLimit: 2})
		e.eventually("a fire", func() bool { return len(e.runs(ref.ScheduleID)) >= 1 })

		if err := e.sch().PauseSchedule(e.Ctx, api.PauseScheduleRequest{ScheduleRef: ref, Paused: true, Note: "upstream late", Identity: "ops"}); err != nil {
			t.Fatal(err)
		}
		d := e.describe(ref.ScheduleID)
		if !d.Schedule.Paused || d.Schedule.Note != "upstream late" || d.PausedBy != "ops" || d.PausedAt.IsZero() || len(d.NextFires) != 0 {
			t.Fatalf("paused schedule described as %+v", d)
		}
		e.eventually("the list shows it paused", func() bool {
			list, err := e.sch().ListSchedules(e.Ctx, api.ListSchedulesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(list.Schedules, func(s api.ScheduleSummary) bool { return s.ScheduleID == ref.ScheduleID })
			return i >= 0 && list.Schedules[i].Paused && list.Schedules[i].NextFire.IsZero()
		})
		before := d.Actions
		// Two fire times pass while it is paused (the scheduler counts
		// them), and no action is taken.
		e.eventually("two fires paused", func() bool { return e.describe(ref.ScheduleID).PausedFires >= 2 })
		if d := e.describe(ref.ScheduleID); d.Actions != before || d.PausedFires < 2 {
			t.Fatalf("paused: %d actions taken, %d fires paused; want none and at least 2", d.Actions-before, d.PausedFires)
		}
		e.eventually("every action's run listed", func() bool { return len(e.runs(ref.ScheduleID)) == int(before) })
		e.trigger(ref.ScheduleID)
		e.eventually("the triggered run", func() bool { return len(e.runs(ref.ScheduleID)) == int(before)+1 })
		if err := e.sch().PauseSchedule(e.Ctx, api.PauseScheduleRequest{ScheduleRef: ref, Paused: false, Identity: "ops"}); err != nil {
			t.Fatal(err)
		}
		if d := e.describe(ref.ScheduleID); d.Schedule.Paused || len(d.NextFires) != 10 || d.Triggers != 1 {
			t.Fatalf("unpaused schedule described as %+v", d)
		}
		e.eventually("fires again", func() bool { return len(e.runs(ref.ScheduleID)) >= int(before)+3 })

		e.eventually("the limit", func() bool { return e.describe("limited").Actions == 2 })
		// No run follows: wait until the fire time after the second run's
		// is 1.5s past (long past by now, as the limit came in the first
		// seconds).
		e.eventually("the limited runs listed", func() bool { return len(e.runs("limited")) >= 2 })
		second := fireTime(t, e.runs("limited")[1])
		time.Sleep(time.Until(second.Add(time.Second + 1500*time.Millisecond)))
		if n, d := len(e.runs("limited")), e.describe("limited"); n != 2 || len(d.NextFires) != 0 {
			t.Fatalf("limited: %d runs, next fires %v; want 2 and none", n, d.NextFires)
		}

		if err := e.sch().DeleteSchedule(e.Ctx, api.DeleteScheduleRequest{ScheduleRef: ref, Identity: "ops"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.sch().DescribeSchedule(e.Ctx, ref); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("describe after delete: %v; want not found", err)
		}
		if err := e.sch().PauseSchedule(e.Ctx, api.PauseScheduleRequest{ScheduleRef: ref, Paused: true}); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("pause after delete: %v; want not found", err)
		}
	})
}

// TestBadInput refuses bad schedules with the field at fault and writes
// nothing.
func TestBadInput(t *testing.T) {
	e := newEnv(t, testdb.SQLite(t))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	good := api.Schedule{Spec: api.ScheduleSpec{Cron: []string{"@hourly"}}, Action: api.ScheduleAction{WorkflowType: "Job"}}
	for _, c := range []struct {
		field string
		edit  func(*api.Schedule)
	}{
		{"schedule.spec.cron[0]", func(s *api.Schedule) { s.Spec.Cron = []string{"61 * * * *"} }},
		{"schedule.spec.cron", func(s *api.Schedule) { s.Spec.Cron = nil }},
		{"schedule.spec.end", func(s *api.Schedule) { s.Spec.Start, s.Spec.End = at, at.Add(-time.Hour) }},
		{"schedule.spec.time_zone", func(s *api.Schedule) { s.Spec.TimeZone = "Mars/Olympus" }},
		{"schedule.action.workflow_type", func(s *api.Schedule) { s.Action.WorkflowType = "" }},
		{"schedule.policies.overlap", func(s *api.Schedule) { s.Policies.Overlap = "sometimes" }},
		{"schedule.policies.catchup", func(s *api.Schedule) { s.Policies.Catchup = "sometimes" }},
		{"schedule.action_limit", func(s *api.Schedule) { s.ActionLimit = -1 }},
		{"schedule.action.attributes", func(s *api.Schedule) { s.Action.Attributes = map[string]string{"": "x"} }},
	} {
		sc := good
		c.edit(&sc)
		err := e.sch().CreateSchedule(e.Ctx, api.CreateScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: "bad"}, Schedule: sc})
		var ia *store.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != c.field {
			t.Errorf("%s: got %v; want an invalid argument of that field", c.field, err)
		}
	}
	list, err := e.sch().ListSchedules(e.Ctx, api.ListSchedulesRequest{})
	if err != nil || len(list.Schedules) != 0 {
		t.Fatalf("after bad input: %+v, %v; want no schedule", list, err)
	}
	if _, err := e.sch().DescribeSchedule(e.Ctx, api.ScheduleRef{ScheduleID: "bad"}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("describe: %v; want not found", err)
	}
	e.create("good", good)
	if err := e.sch().CreateSchedule(e.Ctx, api.CreateScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: "good"}, Schedule: good}); !errors.Is(err, api.ErrAlreadyExists) {
		t.Fatalf("second create: %v; want already exists", err)
	}
	for _, c := range []struct {
		field string
		req   api.BackfillScheduleRequest
	}{
		{"end", api.BackfillScheduleRequest{Start: at, End: at.Add(-time.Hour)}},
		{"end", api.BackfillScheduleRequest{Start: at, End: at.AddDate(2, 0, 0)}}, // 17,520 hours
		{"start", api.BackfillScheduleRequest{End: at}},
	} {
		c.req.ScheduleRef = api.ScheduleRef{ScheduleID: "good"}
		err := e.sch().BackfillSchedule(e.Ctx, c.req)
		var ia *store.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != c.field {
			t.Errorf("backfill %s: got %v; want an invalid argument of that field", c.field, err)
		}
	}
	bad := good
	bad.Spec.Cron = []string{"@every 0.5s"}
	err = e.sch().UpdateSchedule(e.Ctx, api.UpdateScheduleRequest{ScheduleRef: api.ScheduleRef{ScheduleID: "good"}, Schedule: bad})
	var ia *store.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "schedule.spec.cron[0]" {
		t.Fatalf("update with a bad spec: %v", err)
	}
	if d := e.describe("good"); d.Schedule.Spec.Cron[0] != "@hourly" || len(e.runs("good")) != 0 || d.Backfilled != 0 {
		t.Fatalf("bad input changed the schedule: %+v", d)
	}
}
