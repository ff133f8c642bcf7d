package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/internal/yamldoc"
	"github.com/strandhq/strand/store"
)

// newDAGCommand is strand dag: DolphinScheduler-style pipelines.
func newDAGCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "dag", Short: "Define, run and command DAG pipelines (run by strand worker)"}
	o.register(cmd)
	client := func() (*dag.Client, error) {
		svc, err := o.service()
		if err != nil {
			return nil, err
		}
		return dag.NewClient(svc, o.namespace), nil
	}

	var offline bool
	var file string
	apply := &cobra.Command{
		Use: "apply -f FILE", Short: "Check a definition (YAML or JSON) and store it as a new version when it changed", Args: cobra.NoArgs,
		Example: "  strand dag apply -f pipeline.yaml",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			if file == "" {
				return &usageError{errors.New("-f FILE: name the definition's file (- for stdin)")}
			}
			text, err := readFileArg(file)
			if err != nil {
				return &usageError{err}
			}
			a, err := c.Apply(cmd.Context(), text, cliIdentity(), offline)
			if err != nil {
				return definitionFileError(err, file)
			}
			for _, w := range a.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: %s\n", file, w)
			}
			return o.print(cmd.OutOrStdout(), a, func(tw *tabwriter.Writer) {
				what := "unchanged"
				if a.Changed {
					what = "stored"
				}
				state := "offline"
				if a.Release.Online {
					state = "online"
				}
				fmt.Fprintf(tw, "%s version %d %s (sha1 %s); current version %d, %s\n", a.Definition.Name, a.Version, what, a.SHA1, a.Release.Current, state)
			})
		},
	}
	apply.Flags().StringVarP(&file, "file", "f", "", "the definition's file")
	apply.Flags().BoolVar(&offline, "offline", false, "a new definition starts offline (it cannot be started or scheduled until strand dag online)")

	list := &cobra.Command{
		Use: "list", Short: "List the definitions with their current version and release state", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			all, err := c.Catalog.List(cmd.Context())
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), all, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NAME\tCURRENT\tVERSIONS\tSTATE")
				for _, s := range all {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", s.Name, s.Current, s.Versions, onlineWord(s.Online))
				}
			})
		},
	}

	var version int32
	show := &cobra.Command{
		Use: "show NAME", Short: "Print a definition's text (the current version, or --version)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			d, err := c.Catalog.Get(cmd.Context(), args[0], version)
			if err != nil {
				return err
			}
			if o.output == "json" {
				return o.print(cmd.OutOrStdout(), d, nil)
			}
			_, err = cmd.OutOrStdout().Write(d.Body)
			return err
		},
	}
	show.Flags().Int32Var(&version, "version", 0, "the version (default: the current one)")

	versions := &cobra.Command{
		Use: "versions NAME", Short: "List a definition's versions", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			all, err := c.Catalog.Versions(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rel, _ := c.Catalog.Release(cmd.Context(), args[0])
			return o.print(cmd.OutOrStdout(), all, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "VERSION\tSHA1\tCREATED\tBY\t")
				for _, d := range all {
					mark := ""
					if d.Version == rel.Current {
						mark = "current"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", d.Version, d.SHA1, d.CreatedAt.Format(time.RFC3339), d.ModifiedBy, mark)
				}
			})
		},
	}

	diff := &cobra.Command{
		Use: "diff NAME FROM TO", Short: "Show what changed from one version of a definition to another (unified diff)", Args: cobra.ExactArgs(3),
		Example: "  strand dag diff daily-sales 3 4",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			from, err := versionArg(args[1])
			if err != nil {
				return err
			}
			to, err := versionArg(args[2])
			if err != nil {
				return err
			}
			d, err := c.Catalog.Diff(cmd.Context(), args[0], from, to)
			if err != nil {
				return err
			}
			if d == "" {
				d = fmt.Sprintf("versions %d and %d are the same\n", from, to)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), d)
			return err
		},
	}
	useVersion := &cobra.Command{
		Use: "use NAME VERSION", Short: "Make a version the current one: the one instances and schedules start with", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			v, err := versionArg(args[1])
			if err != nil {
				return err
			}
			if err := c.Catalog.SetCurrent(cmd.Context(), args[0], v, cliIdentity()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s runs version %d\n", args[0], v)
			return nil
		},
	}

	release := func(use, short string, online bool) *cobra.Command {
		return &cobra.Command{
			Use: use + " NAME", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := client()
				if err != nil {
					return err
				}
				if err := c.Catalog.SetOnline(cmd.Context(), args[0], online, cliIdentity()); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s is %s\n", args[0], onlineWord(online))
				return nil
			},
		}
	}

	var (
		params     []string
		id         string
		group      string
		strategy   string
		scheduleAt string
		runZone    string
		from       []string
		wait       bool
	)
	run := &cobra.Command{
		Use: "run NAME", Short: "Start an instance", Args: cobra.ExactArgs(1),
		Example: "  strand dag run daily-sales --param dt=20261124 --wait",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			in := dag.RunInput{DAG: args[0], Version: version, WorkerGroup: group, FailureStrategy: dag.FailureStrategy(strategy), StartFrom: from, TimeZone: runZone}
			switch in.FailureStrategy {
			case "", dag.FailureEnd, dag.FailureFinishRunning, dag.FailureContinue:
			default:
				return &usageError{fmt.Errorf("--failure-strategy %q: want end, finish_running or continue", strategy)}
			}
			if in.Params, err = keyValues("param", params); err != nil {
				return err
			}
			if scheduleAt != "" {
				if in.ScheduleTime, err = time.Parse(time.RFC3339, scheduleAt); err != nil {
					return &usageError{fmt.Errorf("--schedule-time %q: want RFC 3339, such as 2026-11-24T00:00:00Z", scheduleAt)}
				}
			}
			started, err := c.Start(cmd.Context(), in, dag.StartOptions{ID: id, Identity: cliIdentity()})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "started instance %s\n", started.WorkflowID)
			for _, w := range started.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: %s\n", args[0], w)
			}
			if !wait {
				return nil
			}
			return waitInstance(cmd, o, c, started.WorkflowID)
		},
	}
	rf := run.Flags()
	rf.StringArrayVar(&params, "param", nil, "a start parameter NAME=VALUE, over the global one (repeat)")
	rf.StringVar(&id, "id", "", "the instance's workflow id (default NAME-TIME-RANDOM)")
	rf.Int32Var(&version, "version", 0, "run this version (default: the current one)")
	rf.StringVar(&group, "worker-group", "", "the worker group of tasks that name none")
	rf.StringVar(&strategy, "failure-strategy", "", "end (a failure kills the running tasks), finish_running (they finish) or continue (default: the definition's)")
	rf.StringVar(&scheduleAt, "schedule-time", "", "the business time time expressions count from (RFC 3339; default now)")
	rf.StringVar(&runZone, "time-zone", "", "the IANA time zone business dates and time expressions are computed in (default UTC, or --schedule-time's offset)")
	rf.StringSliceVar(&from, "start-from", nil, "start at these tasks; those they do not lead to count as succeeded")
	rf.BoolVar(&wait, "wait", false, "wait for the instance to end and print its tasks")

	var pageSize int
	var stateFilter string
	instances := &cobra.Command{
		Use: "instances [NAME]", Short: "List instances, newest first", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			page, err := c.Instances(cmd.Context(), name, dag.State(stateFilter), pageSize, nil)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), page, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "INSTANCE\tDAG\tVERSION\tSTATE\tBUSINESS DATE\tSTARTED\tCLOSED")
				for _, r := range page.Runs {
					closed := ""
					if !r.CloseTime.IsZero() {
						closed = r.CloseTime.Format(time.RFC3339)
					}
					a := r.Attributes
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.WorkflowID, r.BusinessKey, a[dag.AttrVersion], cmp.Or(a[dag.AttrState], r.Status.String()),
						a[dag.AttrDate], r.StartTime.Format(time.RFC3339), closed)
				}
			})
		},
	}
	instances.Flags().IntVar(&pageSize, "limit", 50, "how many")
	instances.Flags().StringVar(&stateFilter, "state", "", "only instances in this state (success, failure, running, paused, stop, ...)")

	tasks := &cobra.Command{
		Use: "tasks INSTANCE", Short: "Show an instance's state and its tasks'", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			inst, _, err := c.Instance(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := printInstance(cmd, o, inst); err != nil {
				return err
			}
			// Who waits in vain: a group no worker polls (as far as the
			// server tells).
			notes, _ := c.Unpolled(cmd.Context(), inst)
			for _, n := range notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", n)
			}
			return nil
		},
	}

	var follow bool
	var attempt int32
	logs := &cobra.Command{
		Use:   "logs INSTANCE TASK",
		Short: "Print a task's log: every attempt's, each under a header (--attempt N: one); -f follows the last attempt while it runs",
		Long: "Print a task's log: every attempt's, first to last, each under a header line (the attempt, where it ran,\n" +
			"when, with the time zone, and how it ended). A shell task's stdout and stderr lines come in the order\n" +
			"they were written, stderr's marked [stderr]. --attempt N prints attempt N only; -f follows the last\n" +
			"attempt while it runs, and the attempts after it.",
		Example: "  strand dag logs etl-0302 t_flaky\n  strand dag logs etl-0302 t_flaky --attempt 2",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if attempt < 0 {
				return &usageError{fmt.Errorf("--attempt %d: want 1 or more", attempt)}
			}
			if !follow {
				var all []dag.TaskLog
				if attempt > 0 {
					l, err := c.AttemptLog(cmd.Context(), args[0], args[1], attempt)
					if err != nil {
						return err
					}
					if o.output == "json" {
						return o.print(w, l, nil)
					}
					all = []dag.TaskLog{l}
				} else if all, err = c.Logs(cmd.Context(), args[0], args[1]); err != nil {
					return err
				}
				if o.output == "json" {
					return o.print(w, all, nil)
				}
				for i, l := range all {
					if i > 0 {
						fmt.Fprintln(w)
					}
					printAttemptHeader(w, l)
					fmt.Fprint(w, l.Log)
					if l.Log != "" && !strings.HasSuffix(l.Log, "\n") {
						fmt.Fprintln(w)
					}
				}
				return nil
			}
			var seen int64
			var shown int32
			for {
				l, err := c.AttemptLog(cmd.Context(), args[0], args[1], attempt)
				if err != nil {
					return err
				}
				if l.Attempt != shown {
					if shown != 0 {
						fmt.Fprintln(w)
					}
					printAttemptHeader(w, l)
					shown, seen = l.Attempt, 0
				}
				text, missed := l.Unseen(seen)
				if missed > 0 {
					fmt.Fprintf(w, "\n[%d bytes of the log are not kept]\n", missed)
				}
				fmt.Fprint(w, text)
				seen = max(seen, l.Size)
				if !l.Running && (attempt > 0 || l.State != dag.StateFailure || taskEnded(cmd, c, args[0], args[1])) {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(time.Second):
				}
			}
		},
	}
	logs.Flags().Int32Var(&attempt, "attempt", 0, "print only this attempt (1 is the first)")
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "follow the log while the task runs")

	command := func(action, short string) *cobra.Command {
		return &cobra.Command{
			Use: action + " INSTANCE", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := client()
				if err != nil {
					return err
				}
				if err := c.Command(cmd.Context(), args[0], action, cliIdentity()); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "asked %s to %s\n", args[0], action)
				return nil
			},
		}
	}

	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a definition: offline and out of the lists (its versions and instances stay; apply brings it back)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			if err := c.Catalog.Delete(cmd.Context(), args[0], cliIdentity()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", args[0])
			return nil
		},
	}

	var alertURL string
	var alertHeaders []string
	alert := &cobra.Command{
		Use: "alert-group NAME --url URL", Short: "Create or replace a webhook-only alert group (strand alert-group set also emails users and addresses)", Args: cobra.ExactArgs(1),
		Example: "  strand dag alert-group data-team --url https://hooks.example.com/strand --header 'Authorization=Bearer xyz'",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			headers, err := keyValues("header", alertHeaders)
			if err != nil {
				return err
			}
			if err := c.Catalog.SetAlertGroup(cmd.Context(), args[0], dag.AlertGroup{URL: alertURL, Headers: headers}, cliIdentity()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "alert group %s posts to %s\n", args[0], alertURL)
			return nil
		},
	}
	alert.Flags().StringVar(&alertURL, "url", "", "the webhook's URL")
	alert.Flags().StringArrayVar(&alertHeaders, "header", nil, "a header NAME=VALUE of each call (repeat)")

	var (
		cronSpecs []string
		timeZone  string
		schedID   string
		warnType  string
		warnGroup string
		priority  string
		// catch-up after downtime (issue 35 item 6)
		catchup       string
		catchupWindow time.Duration
	)
	sched := &cobra.Command{
		Use: "schedule NAME --cron SPEC", Short: "Schedule a definition: a schedule whose fire time is each instance's business time (manage it with strand schedule)", Args: cobra.ExactArgs(1),
		Example: "  strand dag schedule daily-sales --cron '0 2 * * *' --time-zone Asia/Shanghai --failure-strategy continue --warning failure --alert-group data-team",
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			c := dag.NewClient(svc, o.namespace)
			rel, err := c.Catalog.Release(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !rel.Online {
				return fmt.Errorf("%w: %s is offline: put it online first (strand dag online %s)", api.ErrFailedPrecondition, args[0], args[0])
			}
			// The instances compute their business dates in the zone the
			// cron expressions are read in.
			in := dag.RunInput{DAG: args[0], WorkerGroup: group, FailureStrategy: dag.FailureStrategy(strategy), Priority: dag.Priority(priority), TimeZone: timeZone}
			if warnType != "" {
				in.Warning = &dag.Warning{Type: dag.WarningType(warnType), Group: warnGroup}
			}
			if in.Params, err = keyValues("param", params); err != nil {
				return err
			}
			action, err := dag.ScheduleAction(in)
			if err != nil {
				return err
			}
			if schedID == "" {
				schedID = "dag-" + args[0]
			}
			err = svc.CreateSchedule(cmd.Context(), api.CreateScheduleRequest{ScheduleRef: api.ScheduleRef{Namespace: o.namespace, ScheduleID: schedID},
				Schedule: api.Schedule{Spec: api.ScheduleSpec{Cron: cronSpecs, TimeZone: timeZone}, Action: action,
					Policies: api.SchedulePolicies{Catchup: api.CatchupPolicy(catchup), CatchupWindow: catchupWindow}}, Identity: cliIdentity()})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created schedule %s (strand schedule describe %s)\n", schedID, schedID)
			return nil
		},
	}
	sf := sched.Flags()
	sf.StringArrayVar(&cronSpecs, "cron", nil, "a cron expression (repeat for several calendars)")
	sf.StringVar(&timeZone, "time-zone", "", "the IANA time zone of the cron expressions and of the business dates (default UTC)")
	sf.StringVar(&schedID, "id", "", "the schedule's id (default dag-NAME)")
	sf.StringArrayVar(&params, "param", nil, "a start parameter NAME=VALUE (repeat)")
	sf.StringVar(&group, "worker-group", "", "the worker group of tasks that name none")
	sf.StringVar(&strategy, "failure-strategy", "", "end (a failure kills the running tasks), finish_running (they finish) or continue (default: the definition's)")
	sf.StringVar(&warnType, "warning", "", "none, success, failure or all (default: the definition's)")
	sf.StringVar(&warnGroup, "alert-group", "", "the alert group of --warning")
	sf.StringVar(&priority, "priority", "", "highest, high, medium, low or lowest")
	sf.StringVar(&catchup, "catchup", "", "which fires that came due while Strand was down are taken: latest (default), none or all (within --catchup-window)")
	sf.DurationVar(&catchupWindow, "catchup-window", 0, "how late a missed fire may still be taken after downtime (default 1h)")

	var failedOnly bool
	rerun := &cobra.Command{
		Use: "rerun INSTANCE", Short: "Start an ended instance again at its version, parameters and business time", Args: cobra.ExactArgs(1),
		Example: "  strand dag rerun daily-sales-20261124000000-1a2b3c4d --failed   # start from the failed nodes",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			started, err := c.Restart(cmd.Context(), args[0], failedOnly, from, cliIdentity())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "started %s again (run %s)\n", started.WorkflowID, started.RunID)
			if !wait {
				return nil
			}
			return waitInstance(cmd, o, c, started.WorkflowID)
		},
	}
	rerun.Flags().BoolVar(&failedOnly, "failed", false, "start from the failed nodes: tasks that succeeded keep their outcome")
	rerun.Flags().StringSliceVar(&from, "start-from", nil, "start at these tasks")
	rerun.Flags().BoolVar(&wait, "wait", false, "wait for the instance to end")

	cmd.AddCommand(apply, list, show, versions, diff, useVersion,
		release("online", "Put a definition online: it may be started and scheduled", true),
		release("offline", "Take a definition offline: it may not be started or scheduled", false),
		run, instances, tasks, logs,
		command(dag.ActionPause, "Pause an instance: running tasks finish, no new ones start"),
		command(dag.ActionResume, "Resume a paused instance"),
		command(dag.ActionStop, "Stop an instance: running tasks are killed (a shell task's whole process group)"),
		rerun, del, alert, sched)
	cmd.AddCommand(newDAGBackfillCommands(o, client)...)
	return cmd
}

// versionArg reads a version number argument.
func versionArg(s string) (int32, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 1 {
		return 0, &usageError{fmt.Errorf("version %q: want a version number (1 or more)", s)}
	}
	return int32(v), nil
}

func onlineWord(online bool) string {
	if online {
		return "online"
	}
	return "offline"
}

// keyValues reads NAME=VALUE flags.
func keyValues(flag string, list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, &usageError{fmt.Errorf("--%s %q: want NAME=VALUE", flag, kv)}
		}
		out[k] = v
	}
	return out, nil
}

func readFileArg(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}

// waitInstance polls an instance until it ends, then prints it; a failed
// instance is an error.
func waitInstance(cmd *cobra.Command, o *cliOptions, c *dag.Client, id string) error {
	for {
		inst, rec, err := c.Instance(cmd.Context(), id)
		if err != nil {
			return err
		}
		if rec.Status != store.StatusRunning {
			if err := printInstance(cmd, o, inst); err != nil {
				return err
			}
			if inst.State != dag.StateSuccess {
				return fmt.Errorf("instance %s ended %s", id, inst.State)
			}
			return nil
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func printInstance(cmd *cobra.Command, o *cliOptions, inst *dag.Instance) error {
	return o.print(cmd.OutOrStdout(), inst, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "%s version %d: %s (business time %s)\n", inst.DAG, inst.Version, inst.State, inst.ScheduleTime.Format(time.RFC3339))
		fmt.Fprintln(tw, "TASK\tTYPE\tSTATE\tATTEMPT\tDURATION\tHOST\tOUTPUTS")
		for _, t := range inst.Tasks {
			dur := ""
			if !t.StartTime.IsZero() && !t.EndTime.IsZero() {
				dur = t.EndTime.Sub(t.StartTime).Round(time.Millisecond).String()
			}
			var outs []string
			for k, v := range t.Outputs {
				outs = append(outs, k+"="+v)
			}
			state := string(t.State)
			switch {
			case t.State == dag.StateNone:
				state = "-" // not reached yet
			case t.State == dag.StateSubmitted && t.WorkerGroup != "":
				state += " (waiting for a worker of group " + t.WorkerGroup + ")"
			case t.State == dag.StateSubmitted && t.Queue != "":
				state += " (waiting for a worker of queue " + t.Queue + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Type, state, strconv.Itoa(int(t.Attempt)), dur, t.Host, strings.Join(outs, " "))
		}
		tw.Flush()
		// The errors, after the table: they are long.
		for _, t := range inst.Tasks {
			if t.Error != "" && t.State != dag.StateStopped {
				fmt.Fprintf(tw, "%s: %s\n", t.Name, t.Error)
			}
		}
		if inst.Error != "" {
			fmt.Fprintf(tw, "the instance: %s\n", inst.Error)
		}
	})
}

// printAttemptHeader prints the line above an attempt's log: which
// attempt, where and when it ran (times in the CLI's zone, with it), and
// how it ended.
func printAttemptHeader(w io.Writer, l dag.TaskLog) {
	h := fmt.Sprintf("=== task %s, attempt %d of %d", l.Task, l.Attempt, max(l.Attempts, l.Attempt))
	if l.Host != "" {
		h += " on " + l.Host
		if l.PID != 0 {
			h += fmt.Sprintf(" (pid %d)", l.PID)
		}
	}
	const layout = "2006-01-02 15:04:05 MST"
	switch {
	case !l.StartTime.IsZero() && !l.EndTime.IsZero():
		h += fmt.Sprintf(", %s to %s (%s)", l.StartTime.Local().Format(layout), l.EndTime.Local().Format(layout), l.EndTime.Sub(l.StartTime).Round(time.Millisecond))
	case !l.StartTime.IsZero():
		h += ", since " + l.StartTime.Local().Format(layout)
	}
	h += ": " + string(l.State)
	if l.Running {
		h += " (running)"
	}
	if l.ExitCode != 0 {
		h += fmt.Sprintf(", exit code %d", l.ExitCode)
	}
	if l.Error != "" {
		h += ": " + l.Error
	}
	fmt.Fprintln(w, h+" ===")
	if l.Skipped > 0 {
		fmt.Fprintf(w, "[the log's middle, %d bytes, is not kept]\n", l.Skipped)
	}
}

// taskEnded reports whether an instance's task has ended (no attempt of
// it comes any more), or cannot be read.
func taskEnded(cmd *cobra.Command, c *dag.Client, id, name string) bool {
	inst, _, err := c.Instance(cmd.Context(), id)
	if err != nil {
		return true
	}
	for _, t := range inst.Tasks {
		if t.Name == name {
			return t.State != dag.StateRunning && t.State != dag.StateSubmitted && t.State != dag.StateWaitingDepend
		}
	}
	return true
}

// definitionFileError names the file of a definition that did not parse
// (a usage error: exit status 2), and returns other errors as they are.
func definitionFileError(err error, file string) error {
	var de *yamldoc.Error
	if errors.As(err, &de) {
		de.File = file
		return &usageError{de}
	}
	return err
}
