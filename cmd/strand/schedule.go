package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strandhq/strand/api"
)

// scheduleFlags are the flags that define a schedule (create and update).
type scheduleFlags struct {
	cron          []string
	timeZone      string
	start, end    string
	jitter        time.Duration
	workflowType  string
	input         string
	queue         string
	priority      int8
	runTimeout    time.Duration
	overlap       string
	catchupWindow time.Duration
	catchup       string
	limit         int64
}

func (f *scheduleFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.cron, "cron", nil, `when it fires, repeatable: a cron expression of 5 fields or 6 (seconds first), @daily-style names, "@every 90s"`)
	fs.StringVar(&f.timeZone, "time-zone", "", "the IANA time zone the cron expressions are read in (default UTC)")
	fs.StringVar(&f.start, "start", "", "no fire before this time (RFC 3339 or YYYY-MM-DD)")
	fs.StringVar(&f.end, "end", "", "no fire at or after this time (RFC 3339 or YYYY-MM-DD)")
	fs.DurationVar(&f.jitter, "jitter", 0, "delay each fire by up to this long")
	fs.StringVar(&f.workflowType, "workflow-type", "", "the workflow each fire starts")
	fs.StringVar(&f.input, "input", "", "its input, JSON")
	fs.StringVar(&f.queue, "queue", "", "its task queue (default: default)")
	fs.Int8Var(&f.priority, "priority", 0, "its priority, 1 (highest) to 5")
	fs.DurationVar(&f.runTimeout, "run-timeout", 0, "its run timeout")
	fs.StringVar(&f.overlap, "overlap", "", "what a fire does while the last run is open: skip (default), buffer_one, buffer_all, cancel_other, terminate_other, allow_all")
	fs.DurationVar(&f.catchupWindow, "catchup-window", 0, "how late a missed fire may still be taken after downtime (default 1h)")
	fs.StringVar(&f.catchup, "catchup", "", "which fires that came due while Strand was down are taken: latest (default), none or all (within --catchup-window)")
	fs.Int64Var(&f.limit, "limit", 0, "take at most this many fires in all (0: no limit)")
}

// parseTime reads a flag's time: RFC 3339, or a day (midnight UTC).
func parseTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, &usageError{fmt.Errorf("--%s %q: want RFC 3339 (2026-01-03T00:00:00Z) or a day (2026-01-03)", flag, v)}
}

// apply sets the fields of sc whose flags were given (all of them for a
// create).
func (f *scheduleFlags) apply(fs *pflag.FlagSet, sc *api.Schedule) error {
	set := func(name string) bool { return fs.Changed(name) }
	var err error
	if set("cron") {
		sc.Spec.Cron = f.cron
	}
	if set("time-zone") {
		sc.Spec.TimeZone = f.timeZone
	}
	if set("start") {
		if sc.Spec.Start, err = parseTime("start", f.start); err != nil {
			return err
		}
	}
	if set("end") {
		if sc.Spec.End, err = parseTime("end", f.end); err != nil {
			return err
		}
	}
	if set("jitter") {
		sc.Spec.Jitter = f.jitter
	}
	if set("workflow-type") {
		sc.Action.WorkflowType = f.workflowType
	}
	if set("input") {
		if sc.Action.Input, err = jsonArg("input", f.input); err != nil {
			return err
		}
	}
	if set("queue") {
		sc.Action.Queue = f.queue
	}
	if set("priority") {
		sc.Action.Priority = f.priority
	}
	if set("run-timeout") {
		sc.Action.RunTimeout = f.runTimeout
	}
	if set("overlap") {
		sc.Policies.Overlap = api.OverlapPolicy(f.overlap)
	}
	if set("catchup-window") {
		sc.Policies.CatchupWindow = f.catchupWindow
	}
	if set("catchup") {
		sc.Policies.Catchup = api.CatchupPolicy(f.catchup)
	}
	if set("limit") {
		sc.ActionLimit = f.limit
	}
	return nil
}

func newScheduleCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "schedule", Short: "Run workflows on a calendar: create, pause, trigger and backfill schedules"}
	o.register(cmd)
	ref := func(id string) api.ScheduleRef { return api.ScheduleRef{Namespace: o.namespace, ScheduleID: id} }
	identity := cliIdentity()

	var cf scheduleFlags
	var paused bool
	var note string
	create := &cobra.Command{
		Use: "create SCHEDULE_ID", Short: "Create a schedule", Args: cobra.ExactArgs(1),
		Example: `  strand schedule create nightly --cron "0 2 * * *" --time-zone Europe/Berlin --workflow-type Report --input '{"kind":"daily"}'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			var sc api.Schedule
			if err := cf.apply(cmd.Flags(), &sc); err != nil {
				return err
			}
			sc.Paused, sc.Note = paused, note
			if err := svc.CreateSchedule(cmd.Context(), api.CreateScheduleRequest{ScheduleRef: ref(args[0]), Schedule: sc, Identity: identity}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created schedule %s\n", args[0])
			return nil
		},
	}
	cf.register(create.Flags())
	create.Flags().BoolVar(&paused, "paused", false, "create it paused")
	create.Flags().StringVar(&note, "note", "", "a note on its state")

	var uf scheduleFlags
	update := &cobra.Command{
		Use: "update SCHEDULE_ID", Short: "Change a schedule: the flags given replace what they name", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			d, err := svc.DescribeSchedule(cmd.Context(), ref(args[0]))
			if err != nil {
				return err
			}
			sc := d.Schedule
			if err := uf.apply(cmd.Flags(), &sc); err != nil {
				return err
			}
			if err := svc.UpdateSchedule(cmd.Context(), api.UpdateScheduleRequest{ScheduleRef: ref(args[0]), Schedule: sc, Identity: identity}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "updated schedule %s\n", args[0])
			return nil
		},
	}
	uf.register(update.Flags())

	var limit int
	var pageTokenFlag string
	list := &cobra.Command{
		Use: "list", Short: "List schedules", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			token, err := pageToken(pageTokenFlag)
			if err != nil {
				return err
			}
			page, err := svc.ListSchedules(cmd.Context(), api.ListSchedulesRequest{Namespace: o.namespace, PageSize: limit, PageToken: token})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), page, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "SCHEDULE\tWORKFLOW TYPE\tSPEC\tSTATE\tNEXT FIRE")
				for _, s := range page.Schedules {
					state, next := "active", ""
					if s.Paused {
						state = "paused"
					}
					if !s.NextFire.IsZero() {
						next = s.NextFire.Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ScheduleID, s.WorkflowType, specText(s.Spec), state, next)
				}
				printMore(tw, page.NextPageToken)
			})
		},
	}
	list.Flags().IntVar(&limit, "limit", 100, "at most this many schedules (a page)")
	list.Flags().StringVar(&pageTokenFlag, "page-token", "", "the page after the one that printed this token")

	describe := &cobra.Command{
		Use: "describe SCHEDULE_ID", Short: "Show a schedule: its spec, next fire times and recent actions", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			d, err := svc.DescribeSchedule(cmd.Context(), ref(args[0]))
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), d, func(tw *tabwriter.Writer) { describeSchedule(tw, d) })
		},
	}

	pause := func(p bool) *cobra.Command {
		var note string
		use, short, done := "pause", "Pause a schedule: it takes no fire until unpaused", "paused"
		if !p {
			use, short, done = "unpause", "Unpause a schedule", "unpaused"
		}
		c := &cobra.Command{
			Use: use + " SCHEDULE_ID", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				svc, err := o.service()
				if err != nil {
					return err
				}
				if err := svc.PauseSchedule(cmd.Context(), api.PauseScheduleRequest{ScheduleRef: ref(args[0]), Paused: p, Note: note, Identity: identity}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s schedule %s\n", done, args[0])
				return nil
			},
		}
		c.Flags().StringVar(&note, "note", "", "why, for whoever looks next")
		return c
	}

	var overlap string
	trigger := &cobra.Command{
		Use: "trigger SCHEDULE_ID", Short: "Take a schedule's action now", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if err := svc.TriggerSchedule(cmd.Context(), api.TriggerScheduleRequest{ScheduleRef: ref(args[0]), Overlap: api.OverlapPolicy(overlap), Identity: identity}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "triggered schedule %s\n", args[0])
			return nil
		},
	}
	trigger.Flags().StringVar(&overlap, "overlap", "", "the overlap policy for this action (default: the schedule's)")

	var bStart, bEnd string
	var parallelism int
	backfill := &cobra.Command{
		Use: "backfill SCHEDULE_ID", Short: "Take a schedule's action for every fire time of a past range, each run seeing its own fire time", Args: cobra.ExactArgs(1),
		Example: `  strand schedule backfill nightly --start 2026-01-01 --end 2026-01-11 --parallelism 3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			start, err := parseTime("start", bStart)
			if err != nil {
				return err
			}
			end, err := parseTime("end", bEnd)
			if err != nil {
				return err
			}
			if start.IsZero() || end.IsZero() {
				return &usageError{fmt.Errorf("--start and --end are required")}
			}
			if err := svc.BackfillSchedule(cmd.Context(), api.BackfillScheduleRequest{ScheduleRef: ref(args[0]), Start: start, End: end,
				Parallelism: parallelism, Identity: identity}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backfilling schedule %s from %s to %s\n", args[0], start.Format(time.RFC3339), end.Format(time.RFC3339))
			return nil
		},
	}
	backfill.Flags().StringVar(&bStart, "start", "", "the first fire time's earliest (RFC 3339 or YYYY-MM-DD)")
	backfill.Flags().StringVar(&bEnd, "end", "", "fire times before this (RFC 3339 or YYYY-MM-DD)")
	backfill.Flags().IntVar(&parallelism, "parallelism", 1, "how many runs at once (1: one after another)")

	del := &cobra.Command{
		Use: "delete SCHEDULE_ID", Short: "Delete a schedule; the runs it started go on", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if err := svc.DeleteSchedule(cmd.Context(), api.DeleteScheduleRequest{ScheduleRef: ref(args[0]), Identity: identity}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted schedule %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, describe, update, pause(true), pause(false), trigger, backfill, del)
	return cmd
}

// specText is a spec on one line.
func specText(s api.ScheduleSpec) string {
	if len(s.Cron) == 0 {
		return "(see describe)"
	}
	out := strings.Join(s.Cron, " | ")
	if s.TimeZone != "" {
		out += " (" + s.TimeZone + ")"
	}
	return out
}

func describeSchedule(tw *tabwriter.Writer, d api.ScheduleDescription) {
	sc := d.Schedule
	state := "active"
	if sc.Paused {
		state = "paused"
	}
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	when := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Format(time.RFC3339)
	}
	row("Schedule", d.ScheduleID)
	row("Spec", specText(sc.Spec))
	row("Start", when(sc.Spec.Start))
	row("End", when(sc.Spec.End))
	if sc.Spec.Jitter > 0 {
		row("Jitter", sc.Spec.Jitter.String())
	}
	row("Workflow type", sc.Action.WorkflowType)
	row("Queue", sc.Action.Queue)
	row("Overlap", string(orDefault(sc.Policies.Overlap, api.OverlapSkip)))
	window := sc.Policies.CatchupWindow
	if window <= 0 {
		window = api.DefaultCatchupWindow
	}
	row("Catch-up window", window.String())
	row("Catch-up", string(orDefault(sc.Policies.Catchup, api.CatchupLatest)))
	if sc.ActionLimit > 0 {
		row("Limit", fmt.Sprintf("%d (%d left)", sc.ActionLimit, max(0, sc.ActionLimit-d.Actions)))
	}
	row("State", state)
	row("Note", sc.Note)
	if d.PausedBy != "" {
		row("Paused/unpaused by", d.PausedBy+" at "+when(d.PausedAt))
	}
	row("Actions", fmt.Sprintf("%d fired, %d triggered, %d backfilled; %d skipped (overlap), %d missed (catch-up), %d while paused",
		d.Actions, d.Triggers, d.Backfilled, d.Skipped, d.Missed, d.PausedFires))
	row("Buffered", fmt.Sprint(d.Buffered))
	for _, b := range d.Backfills {
		row("Backfill", fmt.Sprintf("%s to %s: %d/%d started, %d closed, %d at once", when(b.Start), when(b.End), b.Started, b.Total, b.Closed, b.Parallelism))
	}
	row("Created", when(d.CreateTime))
	row("Carried by", d.WorkflowID+" / "+d.RunID)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NEXT FIRES")
	for _, t := range d.NextFires {
		fmt.Fprintln(tw, when(t))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "RECENT ACTIONS\tKIND\tWORKFLOW\tRUN\tSTATUS")
	for _, r := range d.Recent {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", when(r.FireTime), r.Kind, r.WorkflowID, r.RunID, r.Status)
	}
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
