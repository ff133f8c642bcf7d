package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/saga"
)

// newSagaCommand is strand saga: StackSaga-style sagas, their records and
// the operators' actions on them.
func newSagaCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "saga", Short: "Find sagas, read their steps and tryouts, and act on them (StackSaga's model)"}
	o.register(cmd)
	client := func() (*saga.Client, error) {
		svc, err := o.service()
		if err != nil {
			return nil, err
		}
		return saga.NewClient(svc, o.namespace), nil
	}

	var filter saga.Filter
	var since time.Duration
	var limit int
	list := &cobra.Command{
		Use: "list", Short: "Find sagas by name, state and start time, newest first", Args: cobra.NoArgs,
		Example: "  strand saga list --state compensation_failed --since 24h",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			if since < 0 {
				return &usageError{fmt.Errorf("--since %s: want a positive duration", since)}
			}
			if since > 0 {
				filter.StartedAfter = time.Now().Add(-since)
			}
			page, err := c.List(cmd.Context(), filter, limit, nil)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), page, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "SAGA\tNAME\tSTATE\tRUN STATUS\tSTARTED")
				for _, r := range page.Runs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.WorkflowID, r.Attributes[saga.AttrName], r.Attributes[saga.AttrState], r.Status, r.StartTime.Format(time.RFC3339))
				}
			})
		},
	}
	lf := list.Flags()
	lf.StringVar(&filter.Name, "name", "", "only sagas of this name")
	lf.StringVar((*string)(&filter.State), "state", "", "only sagas in this state: "+strings.Join(stateNames(), ", "))
	lf.DurationVar(&since, "since", 0, "only sagas started this long ago or later")
	lf.IntVar(&limit, "limit", 100, "at most this many")

	show := &cobra.Command{
		Use: "show SAGA", Short: "Show a saga: its state, and each step's forward and compensation state", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			rec, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), rec, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "%s (saga %s): %s\n", rec.ID, rec.Name, rec.State)
				fmt.Fprintf(tw, "transaction %s, started %s\n", rec.TransactionID, rec.Started.Format(time.RFC3339))
				fmt.Fprintln(tw, "STEP\tGROUP\tFORWARD\tATTEMPTS\tCOMPENSATION\tATTEMPTS\tERROR")
				for _, s := range rec.Steps {
					group := "-"
					if s.Group > 0 {
						group = fmt.Sprint(s.Group)
					}
					errText := s.Compensation.Error
					if errText == "" {
						errText = s.Forward.Error
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\n", s.Name, group, s.Forward.State, s.Forward.Attempts,
						s.Compensation.State, s.Compensation.Attempts, oneLine(errText))
				}
				for _, op := range rec.Operators {
					step := op.Step
					if step == "" {
						step = "every failed compensation"
					}
					fmt.Fprintf(tw, "operator %s: %s %s (%s) at %s\n", op.Identity, op.Action, step, op.Note, op.Time.Format(time.RFC3339))
				}
			})
		},
	}

	tryouts := &cobra.Command{
		Use: "tryouts SAGA", Short: "List every attempt of every step and compensation of a saga", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			rec, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), rec.Tryouts, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "STEP\tPHASE\tATTEMPT\tOUTCOME\tSTARTED\tTOOK\tKEY\tERROR")
				for _, t := range rec.Tryouts {
					started, took := "-", "-"
					if !t.Started.IsZero() {
						started = t.Started.Format(time.RFC3339)
						if !t.Ended.IsZero() {
							took = t.Ended.Sub(t.Started).Round(time.Millisecond).String()
						}
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", t.Step, t.Phase, t.Attempt, t.Outcome, started, took, t.Key, oneLine(t.Error))
				}
			})
		},
	}

	// retry, done and skip decide a failed compensation.
	decide := func(action, short string) *cobra.Command {
		var step, note string
		c := &cobra.Command{
			Use: action + " SAGA", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := client()
				if err != nil {
					return err
				}
				if err := c.Resolve(cmd.Context(), args[0], saga.Operator{Action: action, Step: step, Note: note, Identity: cliIdentity()}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "sent %s to %s\n", action, args[0])
				return nil
			},
		}
		c.Flags().StringVar(&step, "step", "", "the step whose compensation failed (default: every failed one)")
		c.Flags().StringVar(&note, "note", "", "why, for the record")
		return c
	}
	// terminate, disable and enable change the saga's run.
	change := func(use, short string, do func(c *saga.Client) func(*cobra.Command, string, string) error) *cobra.Command {
		var reason string
		c := &cobra.Command{
			Use: use + " SAGA", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := client()
				if err != nil {
					return err
				}
				if err := do(c)(cmd, args[0], reason); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", use, args[0])
				return nil
			},
		}
		c.Flags().StringVar(&reason, "reason", "", "why, for the record")
		return c
	}
	terminate := change("terminate", "Terminate a saga where it is, without compensating", func(c *saga.Client) func(*cobra.Command, string, string) error {
		return func(cmd *cobra.Command, id, reason string) error {
			return c.Terminate(cmd.Context(), id, reason, cliIdentity())
		}
	})
	disable := change("disable", "Disable a saga: its run pauses until enabled", func(c *saga.Client) func(*cobra.Command, string, string) error {
		return func(cmd *cobra.Command, id, reason string) error {
			return c.Disable(cmd.Context(), id, reason, cliIdentity())
		}
	})
	enable := change("enable", "Enable a disabled saga", func(c *saga.Client) func(*cobra.Command, string, string) error {
		return func(cmd *cobra.Command, id, reason string) error {
			return c.Enable(cmd.Context(), id, reason, cliIdentity())
		}
	})

	var bf saga.Filter
	var bSince time.Duration
	var action, note string
	batch := &cobra.Command{
		Use: "batch", Short: "Act on every saga a filter selects: retry, done or skip their failed compensations, or terminate them", Args: cobra.NoArgs,
		Example: "  strand saga batch --action retry --name order --since 24h",
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if bSince < 0 {
				return &usageError{fmt.Errorf("--since %s: want a positive duration", bSince)}
			}
			if bSince > 0 {
				bf.StartedAfter = time.Now().Add(-bSince)
			}
			ref, err := saga.NewClient(svc, o.namespace).Batch(cmd.Context(), svc, bf, action, note, cliIdentity())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "started batch %s (follow it with strand batch describe %s)\n", ref.BatchID, ref.BatchID)
			return nil
		},
	}
	bff := batch.Flags()
	bff.StringVar(&action, "action", "", "retry, done, skip or terminate")
	bff.StringVar(&note, "note", "", "why, for the record")
	bff.StringVar(&bf.Name, "name", "", "only sagas of this name")
	bff.StringVar((*string)(&bf.State), "state", "", "only sagas in this state (retry, done and skip: compensation_failed)")
	bff.DurationVar(&bSince, "since", 0, "only sagas started this long ago or later")
	_ = batch.MarkFlagRequired("action")

	cmd.AddCommand(list, show, tryouts,
		decide(saga.ActionRetry, "Run a failed compensation again"),
		decide(saga.ActionDone, "Record that a failed compensation was done by hand"),
		decide(saga.ActionSkip, "Skip a failed compensation"),
		terminate, disable, enable, batch)
	cmd.AddCommand(sagaDefinitionCommands(o)...)
	return cmd
}

func stateNames() []string {
	var out []string
	for _, s := range saga.States {
		out = append(out, string(s))
	}
	return out
}

// oneLine is the first line of s.
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
