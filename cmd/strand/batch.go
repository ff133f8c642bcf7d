package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

func newBatchCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "batch", Short: "Act on every run a filter matches: signal, cancel, terminate, reset, pause or resume them"}
	o.register(cmd)

	var (
		id, op, wfType, idPrefix, keyPrefix, reason, signalName, signalInput, resetPoint string
		statuses                                                                         []string
		rate                                                                             float64
		resetEvent                                                                       int64
	)
	start := &cobra.Command{
		Use: "start", Short: "Start a batch operation (a durable job: it survives restarts and can be stopped)", Args: cobra.NoArgs,
		Example: `  strand batch start --operation terminate --type Import --status running --reason "bad input file" --rate 100`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			filter := api.ListRequest{WorkflowType: wfType, WorkflowIDPrefix: idPrefix, BusinessKeyPrefix: keyPrefix}
			for _, s := range statuses {
				st, err := store.ParseRunStatus(s)
				if err != nil {
					return &usageError{err}
				}
				filter.Statuses = append(filter.Statuses, st)
			}
			in, err := jsonArg("signal-input", signalInput)
			if err != nil {
				return err
			}
			point := map[string]api.ResetPoint{"": "", "last-workflow-task": api.ResetLastWorkflowTask, "first-failed-step": api.ResetFirstFailedStep,
				"before-event": api.ResetBeforeEvent}
			p, ok := point[resetPoint]
			if !ok {
				return &usageError{fmt.Errorf("--reset-point %q: want last-workflow-task, first-failed-step or before-event", resetPoint)}
			}
			ref, err := svc.StartBatch(cmd.Context(), api.StartBatchRequest{Namespace: o.namespace, BatchID: id, Filter: filter,
				Operation: api.BatchOperation(op), SignalName: signalName, SignalInput: in, ResetPoint: p, ResetEventID: resetEvent,
				Reason: reason, Rate: rate, Identity: cliIdentity()})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), ref, func(tw *tabwriter.Writer) { fmt.Fprintf(tw, "started batch %s\n", ref.BatchID) })
		},
	}
	f := start.Flags()
	f.StringVar(&id, "id", "", "the batch's id (default: a new one)")
	f.StringVar(&op, "operation", "", "signal, cancel, terminate, reset, pause or resume")
	f.StringVar(&wfType, "type", "", "only runs of this workflow type")
	f.StringSliceVar(&statuses, "status", nil, "only runs of these statuses")
	f.StringVar(&idPrefix, "workflow-id-prefix", "", "only runs whose workflow id starts with this")
	f.StringVar(&keyPrefix, "business-key-prefix", "", "only runs whose business key starts with this")
	f.StringVar(&reason, "reason", "", "why, for each run's history")
	f.StringVar(&signalName, "signal-name", "", "with --operation signal: the signal")
	f.StringVar(&signalInput, "signal-input", "", "with --operation signal: its value, JSON")
	f.StringVar(&resetPoint, "reset-point", "", "with --operation reset: last-workflow-task (default), first-failed-step or before-event")
	f.Int64Var(&resetEvent, "reset-event-id", 0, "with --reset-point before-event: the event")
	f.Float64Var(&rate, "rate", 0, fmt.Sprintf("runs a second at most (default %d)", api.DefaultBatchRate))

	describe := &cobra.Command{
		Use: "describe BATCH_ID", Short: "Show a batch's progress and its result per run", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			d, err := svc.DescribeBatch(cmd.Context(), api.BatchRef{Namespace: o.namespace, BatchID: args[0]})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), d, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "batch\t%s\noperation\t%s\nstate\t%s\ndone\t%d (%d succeeded, %d failed)\nstarted\t%s\n",
					d.BatchID, d.Request.Operation, d.State, d.Done, d.Succeeded, d.Failed, d.StartTime.Format(time.RFC3339))
				if !d.CloseTime.IsZero() {
					fmt.Fprintf(tw, "closed\t%s\n", d.CloseTime.Format(time.RFC3339))
				}
				if d.StoppedBy != "" {
					fmt.Fprintf(tw, "stopped by\t%s\n", d.StoppedBy)
				}
				fmt.Fprintln(tw, "\nWORKFLOW\tRUN\tRESULT")
				for _, r := range d.Results {
					res := "ok"
					if r.Error != "" {
						res = r.Error
					} else if r.NewRunID != "" {
						res = "new run " + r.NewRunID
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", r.WorkflowID, r.RunID, res)
				}
			})
		},
	}

	var limit int
	var pageTokenFlag string
	list := &cobra.Command{
		Use: "list", Short: "List batches", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			token, err := pageToken(pageTokenFlag)
			if err != nil {
				return err
			}
			page, err := svc.ListBatches(cmd.Context(), api.ListBatchesRequest{Namespace: o.namespace, PageSize: limit, PageToken: token})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), page, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "BATCH\tOPERATION\tSTATE\tSTARTED")
				for _, b := range page.Batches {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", b.BatchID, b.Operation, b.State, b.StartTime.Format(time.RFC3339))
				}
				printMore(tw, page.NextPageToken)
			})
		},
	}
	list.Flags().IntVar(&limit, "limit", 100, "at most this many batches (a page)")
	list.Flags().StringVar(&pageTokenFlag, "page-token", "", "the page after the one that printed this token")

	stop := &cobra.Command{
		Use: "stop BATCH_ID", Short: "Stop a batch; what it did stays done", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if err := svc.StopBatch(cmd.Context(), api.StopBatchRequest{BatchRef: api.BatchRef{Namespace: o.namespace, BatchID: args[0]}, Identity: cliIdentity()}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopping batch %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(start, describe, list, stop)
	return cmd
}
