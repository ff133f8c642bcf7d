package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/saga"
	"github.com/strandhq/strand/store"
)

// sagaDefinitionCommands are the commands of strand saga for sagas
// defined in YAML, whose steps are HTTP calls run by strand worker:
// apply, run and definitions. o is the saga command's options (its
// --server, --namespace and --output).
func sagaDefinitionCommands(o *cliOptions) []*cobra.Command {
	catalog := func() (*saga.Catalog, *remote.Service, error) {
		svc, err := o.service()
		if err != nil {
			return nil, nil, err
		}
		c := saga.NewCatalog(svc, o.namespace)
		c.Identity = cliIdentity()
		return c, svc, nil
	}

	var file string
	apply := &cobra.Command{
		Use: "apply -f FILE", Short: "Check a saga definition (YAML or JSON) and store it as a new version when it changed", Args: cobra.NoArgs,
		Example: "  strand saga apply -f checkout.yaml",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := catalog()
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
			a, err := c.Apply(cmd.Context(), text)
			if err != nil {
				return definitionFileError(err, file)
			}
			return o.print(cmd.OutOrStdout(), a, func(tw *tabwriter.Writer) {
				what := "unchanged"
				if a.Changed {
					what = "stored"
				}
				fmt.Fprintf(tw, "%s version %d %s (sha1 %s)\n", a.Definition.Name, a.Version, what, a.SHA1)
			})
		},
	}
	apply.Flags().StringVarP(&file, "file", "f", "", "the definition's file")

	var (
		input, id, reuse string
		version          int32
		wait             bool
	)
	run := &cobra.Command{
		Use: "run NAME --input JSON", Short: "Start a saga of a definition (its latest version, or --version), with a JSON input", Args: cobra.ExactArgs(1),
		Example: `  strand saga run checkout --id order-1 --input '{"order": "o-1", "sku": "book", "amount": 12.5}' --wait
  strand saga run checkout --input @order.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, svc, err := catalog()
			if err != nil {
				return err
			}
			if version < 0 {
				return &usageError{fmt.Errorf("--version %d: want a version (1 or more), or 0 for the latest", version)}
			}
			in := []byte(input)
			if name, ok := strings.CutPrefix(input, "@"); ok {
				if in, err = os.ReadFile(name); err != nil {
					return &usageError{fmt.Errorf("--input: %w", err)}
				}
			}
			if !slices.Contains(saga.Reuses, saga.Reuse(reuse)) {
				return &usageError{fmt.Errorf("--id-reuse %q: want one of %v", reuse, saga.Reuses)}
			}
			c.Reuse = saga.Reuse(reuse)
			started, err := c.Run(cmd.Context(), args[0], version, in, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "started saga %s (%s version %d)\n", started.WorkflowID, args[0], started.Version)
			if !wait {
				return nil
			}
			return waitDefinedSaga(cmd, o, svc, started)
		},
	}
	rf := run.Flags()
	rf.StringVar(&input, "input", "", "the saga's input: JSON, or @FILE (default {})")
	rf.StringVar(&id, "id", "", "the saga's id, the business's key such as an order id (default NAME-TIME-RANDOM)")
	rf.StringVar(&reuse, "id-reuse", string(saga.ReuseNever), "whether an id whose saga ended runs again, as a new transaction: never, failed (only if it did not complete) or always")
	rf.Int32Var(&version, "version", 0, "run this version of the definition (default: the latest)")
	rf.BoolVar(&wait, "wait", false, "wait until the saga ends (or waits for an operator) and print its steps")

	var showVersion int32
	definitions := &cobra.Command{
		Use: "definitions [NAME]", Short: "List the saga definitions (their latest versions), or show one's steps", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := catalog()
			if err != nil {
				return err
			}
			if len(args) == 0 {
				all, err := c.Definitions(cmd.Context())
				if err != nil {
					return err
				}
				return o.print(cmd.OutOrStdout(), all, func(tw *tabwriter.Writer) {
					fmt.Fprintln(tw, "NAME\tVERSION\tVERSIONS\tSTEPS\tMODIFIED\tDESCRIPTION")
					for _, s := range all {
						fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", s.Name, s.Version, s.Versions, s.Steps, s.Modified.Format(time.RFC3339), s.Description)
					}
				})
			}
			d, err := c.Definition(cmd.Context(), args[0], showVersion)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), d, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "%s version %d (sha1 %s)", d.Name, d.Version, d.SHA1)
				if d.Definition.Description != "" {
					fmt.Fprintf(tw, ": %s", d.Definition.Description)
				}
				fmt.Fprintln(tw)
				fmt.Fprintln(tw, "STEP\tGROUP\tCALL\tCOMPENSATE")
				groups := 0 // numbered as a saga's records number them
				for _, e := range d.Definition.Steps {
					steps, group := []saga.StepSpec{e}, ""
					if e.Parallel != nil {
						groups++
						steps, group = e.Parallel, strconv.Itoa(groups)
					}
					for _, s := range steps {
						comp := "-"
						if s.Compensate != nil {
							comp = s.Compensate.Method + " " + s.Compensate.URL
						}
						fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\n", s.Name, group, s.Call.Method, s.Call.URL, comp)
					}
				}
			})
		},
	}
	definitions.Flags().Int32Var(&showVersion, "version", 0, "show this version (default: the latest)")
	return []*cobra.Command{apply, run, definitions}
}

// waitDefinedSaga polls a saga until its run closes or it waits for an
// operator, then prints its steps; a saga that did not complete is an
// error.
func waitDefinedSaga(cmd *cobra.Command, o *cliOptions, svc api.Service, started saga.Started) error {
	for {
		rec, err := saga.ReadRecord(cmd.Context(), svc, o.namespace, started.WorkflowID, started.RunID)
		if err != nil {
			return err
		}
		if rec.Status != store.StatusRunning || rec.State == saga.StateCompensationFailed {
			if err := printDefinedSaga(cmd, o, rec); err != nil {
				return err
			}
			switch {
			case rec.State == saga.StateCompleted:
				return nil
			case rec.State == saga.StateCompensationFailed:
				var failed []string
				for _, s := range rec.Steps {
					if s.Compensation.State == saga.PhaseFailed {
						failed = append(failed, s.Name)
					}
				}
				return fmt.Errorf("saga %s waits for an operator: the compensation of %s failed (strand saga retry|done|skip %s --step STEP)",
					rec.ID, strings.Join(failed, ", "), rec.ID)
			case rec.Failure != nil:
				return fmt.Errorf("saga %s ended %s: %s", rec.ID, rec.State, rec.Failure.Message)
			}
			return fmt.Errorf("saga %s ended %s", rec.ID, rec.State)
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func printDefinedSaga(cmd *cobra.Command, o *cliOptions, rec *saga.Record) error {
	return o.print(cmd.OutOrStdout(), rec, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "saga %s (%s): %s\n", rec.ID, rec.Name, rec.State)
		fmt.Fprintln(tw, "STEP\tGROUP\tFORWARD\tATTEMPTS\tANSWER\tCOMPENSATION\tERROR")
		for _, s := range rec.Steps {
			group := ""
			if s.Group > 0 {
				group = strconv.Itoa(s.Group)
			}
			answer := ""
			for _, t := range rec.Tryouts {
				var a struct{ Status int }
				if t.Step == s.Name && t.Phase == saga.PhaseForward && json.Unmarshal(t.Answer.Data, &a) == nil && a.Status != 0 {
					answer = strconv.Itoa(a.Status)
				}
			}
			errText := s.Forward.Error
			if s.Compensation.Error != "" {
				errText = "compensation: " + s.Compensation.Error
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", s.Name, group, s.Forward.State, s.Forward.Attempts, answer, s.Compensation.State, errText)
		}
	})
}
