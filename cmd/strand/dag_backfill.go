package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/dag"
)

// newDAGBackfillCommands are strand dag backfill (DolphinScheduler's
// complement data, without a schedule) and strand dag backfill-status.
func newDAGBackfillCommands(o *cliOptions, client func() (*dag.Client, error)) []*cobra.Command {
	var (
		req      dag.BackfillRequest
		params   []string
		strategy string
		priority string
		wait     bool
	)
	backfill := &cobra.Command{
		Use:   "backfill NAME (--from DATE --to DATE | --dates DATE,DATE...)",
		Short: "Run a DAG once for each business date of a past range or list (complement data), serial or parallel",
		Long: `Run a DAG once for each business date of a range (--from, --to, both included) or of a list
(--dates): each instance's business time is its date at --at (default 00:00) in --time-zone
(default UTC), so $[yyyyMMdd] is the date and system.biz.date the day before.

Serial (the default, --parallelism 1): one date after another, each once the one before it
ended; it stops at the first date that does not succeed, and the later dates do not run.
Parallel (--parallelism N): up to N dates at once; every date runs whatever the others do.
--dependents also runs, for each date, the DAGs whose dependent tasks name this one, once
this DAG's instance of the date succeeded.

The backfill is a run on the server (it survives restarts); it prints the instances it
starts, and strand dag backfill-status ID shows its progress.`,
		Example: "  strand dag backfill daily-sales --from 2026-01-01 --to 2026-01-04 --time-zone Asia/Shanghai --at 02:00 --wait\n" +
			"  strand dag backfill daily-sales --dates 2026-01-01,2026-01-03 --parallelism 2 --dependents",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			r := req
			r.DAG, r.FailureStrategy, r.Priority, r.Identity = args[0], dag.FailureStrategy(strategy), dag.Priority(priority), cliIdentity()
			if r.Params, err = keyValues("param", params); err != nil {
				return err
			}
			b, err := c.Backfill(cmd.Context(), r)
			if err != nil {
				return err
			}
			if o.output != "json" {
				how := "one date after another"
				if b.Parallelism > 1 {
					how = fmt.Sprintf("up to %d dates at once", b.Parallelism)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "started backfill %s of %s: %d dates, %s (strand dag backfill-status %s)\n", b.ID, b.DAG, len(b.Days), how, b.ID)
			}
			if !wait {
				return printBackfill(cmd, o, b)
			}
			return waitBackfill(cmd, o, c, b.ID)
		},
	}
	f := backfill.Flags()
	f.StringVar(&req.From, "from", "", "the first business date of a range, yyyy-MM-dd")
	f.StringVar(&req.To, "to", "", "the last business date of a range, yyyy-MM-dd (included)")
	f.StringSliceVar(&req.Dates, "dates", nil, "a list of business dates, yyyy-MM-dd, comma-separated (instead of --from and --to)")
	f.StringVar(&req.At, "at", "", "the time of day of each instance's business time, HH:MM (default 00:00)")
	f.StringVar(&req.TimeZone, "time-zone", "", "the IANA time zone of the dates and of the business dates (default UTC)")
	f.IntVar(&req.Parallelism, "parallelism", 1, "how many dates run at once (1: serial, stopping at a failure)")
	f.BoolVar(&req.Dependents, "dependents", false, "also run, for each date, the DAGs whose dependent tasks name this one")
	f.StringVar(&req.ID, "id", "", "the backfill's id (default NAME-backfill-TIME-RANDOM); its instances are ID-yyyyMMdd")
	f.Int32Var(&req.Version, "version", 0, "run this version (default: the current one)")
	f.StringArrayVar(&params, "param", nil, "a start parameter NAME=VALUE, over the global one (repeat)")
	f.StringVar(&req.WorkerGroup, "worker-group", "", "the worker group of tasks that name none")
	f.StringVar(&strategy, "failure-strategy", "", "end or continue (default: the definition's)")
	f.StringVar(&priority, "priority", "", "highest, high, medium, low or lowest")
	f.BoolVar(&wait, "wait", false, "wait for the backfill to end and print its instances; a date that did not succeed is an error")

	var waitStatus bool
	status := &cobra.Command{
		Use: "backfill-status BACKFILL", Short: "Show a backfill's progress: each date's instances and their states", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			if waitStatus {
				return waitBackfill(cmd, o, c, args[0])
			}
			b, err := c.BackfillProgress(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printBackfill(cmd, o, b)
		},
	}
	status.Flags().BoolVar(&waitStatus, "wait", false, "wait for the backfill to end")
	return []*cobra.Command{backfill, status}
}

// waitBackfill polls a backfill until it ends, then prints it; a date that
// did not succeed is an error.
func waitBackfill(cmd *cobra.Command, o *cliOptions, c *dag.Client, id string) error {
	for {
		b, err := c.BackfillProgress(cmd.Context(), id)
		if err != nil {
			return err
		}
		if b.State != dag.BackfillRunning {
			if err := printBackfill(cmd, o, b); err != nil {
				return err
			}
			if b.State != dag.BackfillSuccess {
				return fmt.Errorf("backfill %s ended %s", id, b.State)
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

func printBackfill(cmd *cobra.Command, o *cliOptions, b dag.Backfill) error {
	return o.print(cmd.OutOrStdout(), b, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "backfill %s of %s: %s\n", b.ID, b.DAG, b.State)
		fmt.Fprintln(tw, "DATE\tBUSINESS TIME\tDAG\tINSTANCE\tSTATE")
		for _, d := range b.Days {
			for _, x := range d.Instances {
				state := x.State
				if x.Reason != "" && x.State == dag.BackfillNotRun {
					state += " (" + x.Reason + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Date, d.ScheduleTime.Format(time.RFC3339), x.DAG, x.WorkflowID, state)
			}
		}
	})
}
