package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/statemachine"
)

// newStateMachineCommand is strand sm: nFlow-style state machine
// instances.
func newStateMachineCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "sm", Short: "Create, find and change state machine instances (nFlow's model; defined in Go)"}
	o.register(cmd)
	client := func() (*statemachine.Client, error) {
		svc, err := o.service()
		if err != nil {
			return nil, err
		}
		return statemachine.NewClient(svc, o.namespace), nil
	}

	definitions := &cobra.Command{
		Use: "definitions [TYPE]", Short: "List the state machine definitions (their latest versions), or show one's states and transitions", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			typ := ""
			if len(args) == 1 {
				typ = args[0]
			}
			defs, err := c.Definitions(cmd.Context(), typ)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), defs, func(tw *tabwriter.Writer) {
				if typ == "" {
					fmt.Fprintln(tw, "TYPE\tVERSION\tSTATES\tDESCRIPTION")
					for _, d := range defs {
						fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", d.Type, d.Version, len(d.States), d.Description)
					}
					return
				}
				for _, d := range defs {
					fmt.Fprintf(tw, "%s version %d (sha1 %s): %s\n", d.Type, d.Version, d.SHA1, d.Description)
					fmt.Fprintln(tw, "STATE\tKIND\tMOVES TO\tDESCRIPTION")
					for _, s := range d.States {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Kind, strings.Join(d.Transitions[s.Name], ", "), s.Description)
					}
				}
			})
		},
	}

	var (
		state, businessKey, externalID, group, activationFlag, reason string
		vars                                                          []string
		version                                                       int32
		priority                                                      int8
	)
	activation := func() (*time.Time, error) {
		if activationFlag == "" {
			return nil, nil
		}
		t, err := time.Parse(time.RFC3339, activationFlag)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--activation %q: want RFC 3339, such as 2026-11-24T09:00:00Z", activationFlag)}
		}
		return &t, nil
	}
	// inputs are what create and update read besides their own flags: the
	// client, --var and --activation.
	inputs := func() (*statemachine.Client, map[string]string, *time.Time, error) {
		c, err := client()
		if err != nil {
			return nil, nil, nil, err
		}
		v, err := keyValues("var", vars)
		if err != nil {
			return nil, nil, nil, err
		}
		// NAME=@FILE: the value is the file's content.
		for k, val := range v {
			if name, ok := strings.CutPrefix(val, "@"); ok {
				b, err := os.ReadFile(name)
				if err != nil {
					return nil, nil, nil, &usageError{fmt.Errorf("--var %s: %w", k, err)}
				}
				v[k] = string(b)
			}
		}
		at, err := activation()
		return c, v, at, err
	}
	create := &cobra.Command{
		Use: "create TYPE", Short: "Create an instance", Args: cobra.ExactArgs(1),
		Example: "  strand sm create creditApplication --business-key customer-42 --external-id app-7 --var amount=1000",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, v, at, err := inputs()
			if err != nil {
				return err
			}
			req := statemachine.CreateRequest{Type: args[0], Version: version, State: state, Vars: v, BusinessKey: businessKey,
				ExternalID: externalID, ExecutorGroup: group, Priority: priority, Identity: cliIdentity()}
			if at != nil {
				req.Activation = *at
			}
			id, err := c.Create(cmd.Context(), req)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created %s\n", id)
			return nil
		},
	}
	cf := create.Flags()
	cf.StringVar(&state, "state", "", "the start state (default the definition's first)")
	cf.StringArrayVar(&vars, "var", nil, "a state variable NAME=VALUE, or NAME=@FILE for a file's content (repeat)")
	cf.StringVar(&businessKey, "business-key", "", "the business key")
	cf.StringVar(&externalID, "external-id", "", "the external id, unique per type (the instance's id is TYPE/EXTERNAL_ID)")
	cf.StringVar(&group, "executor-group", "", "the task queue of the workers that run it (default default)")
	cf.StringVar(&activationFlag, "activation", "", "when the first state runs (RFC 3339; default now)")
	cf.Int32Var(&version, "version", 0, "the definition version (default the latest)")
	cf.Int8Var(&priority, "priority", 0, "the priority of its tasks on the executor group, 1 (highest) to 5 (lowest); 0 is normal (3)")

	var latestOnly bool
	show := &cobra.Command{
		Use: "show INSTANCE", Short: "Show an instance with its actions and the variables each set", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			inst, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if latestOnly {
				inst.Actions = nil
			}
			return o.print(cmd.OutOrStdout(), inst, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "%s (%s version %d): %s in %s", inst.ID, inst.Type, inst.Version, inst.Status, inst.State)
				if inst.StateText != "" {
					fmt.Fprintf(tw, ": %s", inst.StateText)
				}
				fmt.Fprintln(tw)
				fmt.Fprintf(tw, "executor group %s", inst.ExecutorGroup)
				if inst.Priority != 0 {
					fmt.Fprintf(tw, ", priority %d", inst.Priority)
				}
				fmt.Fprintln(tw)
				if !inst.NextActivation.IsZero() {
					fmt.Fprintf(tw, "next activation %s; retries %d\n", inst.NextActivation.Format(time.RFC3339), inst.Retries)
				}
				for _, k := range slices.Sorted(maps.Keys(inst.Vars)) {
					fmt.Fprintf(tw, "  %s = %s\n", k, inst.Vars[k])
				}
				if len(inst.Actions) > 0 {
					fmt.Fprintln(tw, "ACTION\tTYPE\tSTATE\tRETRY\tSTART\tEND\tBY\tTEXT\tSET")
				}
				for _, a := range inst.Actions {
					var set []string
					for _, k := range slices.Sorted(maps.Keys(a.Updated)) {
						set = append(set, k+"="+a.Updated[k])
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Type, a.State, a.RetryNo,
						a.Start.Format(time.RFC3339), a.End.Sub(a.Start).Round(time.Millisecond), a.Executor, a.Text, strings.Join(set, " "))
				}
			})
		},
	}
	show.Flags().BoolVar(&latestOnly, "latest", false, "only the latest values of the variables, no actions")

	var filter statemachine.Filter
	var limit int
	list := &cobra.Command{
		Use: "list", Short: "Find instances by type, state, status, business key, external id or parent", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			page, err := c.List(cmd.Context(), filter, limit, nil)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), page, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "INSTANCE\tTYPE\tSTATE\tSTATUS\tBUSINESS KEY\tCREATED")
				for _, r := range page.Runs {
					a := r.Attributes
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.WorkflowID, a[statemachine.AttrType], a[statemachine.AttrState],
						a[statemachine.AttrStatus], r.BusinessKey, r.StartTime.Format(time.RFC3339))
				}
			})
		},
	}
	lf := list.Flags()
	lf.StringVar(&filter.Type, "type", "", "only this type")
	lf.StringVar(&filter.State, "state", "", "only instances in this state")
	lf.StringVar((*string)(&filter.Status), "status", "", "only this status: created, inProgress (also while its method runs), manual or finished")
	lf.StringVar(&filter.BusinessKey, "business-key", "", "only this business key")
	lf.StringVar(&filter.ExternalID, "external-id", "", "only this external id")
	lf.StringVar(&filter.Parent, "parent", "", "only children of this instance")
	lf.IntVar(&limit, "limit", 100, "at most this many")

	var moveTo string
	update := &cobra.Command{
		Use: "update INSTANCE", Short: "Change an instance from outside: move it to a state, set its next activation or variables (an external change)", Args: cobra.ExactArgs(1),
		Example: "  strand sm update creditApplication/app-7 --state grantLoan --var approvedBy=alice --reason approved",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, v, at, err := inputs()
			if err != nil {
				return err
			}
			if moveTo == "" && at == nil && len(v) == 0 {
				return &usageError{fmt.Errorf("give --state, --activation or --var")}
			}
			if err := c.Update(cmd.Context(), args[0], statemachine.Update{State: moveTo, Activation: at, Vars: v, Reason: reason, Identity: cliIdentity()}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "updated %s\n", args[0])
			return nil
		},
	}
	uf := update.Flags()
	uf.StringVar(&moveTo, "state", "", "move it to this state")
	uf.StringVar(&activationFlag, "activation", "", "its next activation (RFC 3339)")
	uf.StringArrayVar(&vars, "var", nil, "set a variable NAME=VALUE, or NAME=@FILE for a file's content (repeat)")
	uf.StringVar(&reason, "reason", "", "why, for the action")

	var fromStates []string
	wakeup := &cobra.Command{
		Use: "wakeup INSTANCE", Short: "Wake an instance up now (only from --from states, when given; one in another state is not woken, and told why)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			if err := c.Wakeup(cmd.Context(), args[0], fromStates, cliIdentity()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "woke %s\n", args[0])
			return nil
		},
	}
	wakeup.Flags().StringSliceVar(&fromStates, "from", nil, "only if it is in one of these states")

	var clear bool
	signal := &cobra.Command{
		Use: "signal INSTANCE [VALUE]", Short: "Set an instance's signal (an integer; --clear to clear it) and wake it", Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			var v *int
			if !clear {
				if len(args) != 2 {
					return &usageError{fmt.Errorf("give the signal's value, or --clear")}
				}
				var n int
				if err := json.Unmarshal([]byte(args[1]), &n); err != nil {
					return &usageError{fmt.Errorf("signal %q: want an integer", args[1])}
				}
				v = &n
			}
			if err := c.Signal(cmd.Context(), args[0], v, reason, cliIdentity()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signaled %s\n", args[0])
			return nil
		},
	}
	signal.Flags().BoolVar(&clear, "clear", false, "clear the signal")
	signal.Flags().StringVar(&reason, "reason", "", "why")

	stats := &cobra.Command{
		Use: "stats TYPE", Short: "Count a type's instances per state and status (queued: next activation already come)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			counts, err := c.Stats(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), counts, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "STATE\tSTATUS\tINSTANCES\tQUEUED")
				for _, s := range counts {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", s.State, s.Status, s.Count, s.Queued)
				}
			})
		},
	}
	executors := &cobra.Command{
		Use: "executors", Short: "List the executors: the live nodes, and per executor group (task queue) the workers that polled it lately", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			ex, err := svc.StateMachineExecutors(cmd.Context(), o.namespace)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), ex, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NODE\tADDRESS\tSTARTED")
				for _, n := range ex.Nodes {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", n.ID, n.Address, n.StartedAt.Format(time.RFC3339))
				}
				fmt.Fprintln(tw)
				fmt.Fprintln(tw, "EXECUTOR GROUP\tBACKLOG\tWORKER\tNODE\tPOLLING\tLAST SEEN")
				for _, g := range ex.Groups {
					if len(g.Executors) == 0 {
						fmt.Fprintf(tw, "%s\t%d\t(none)\t\t\t\n", g.Group, g.Backlog)
					}
					for _, e := range g.Executors {
						fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%t\t%s\n", g.Group, g.Backlog, e.Identity, e.Node, e.Polling, e.LastSeen.Format(time.RFC3339))
					}
				}
				if ex.Partial {
					fmt.Fprintln(tw, "(a node did not answer: its workers are missing)")
				}
			})
		},
	}
	cmd.AddCommand(definitions, create, show, list, update, wakeup, signal, stats, executors)
	return cmd
}
