package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/api"
)

func newTaskCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "task", Short: "Human tasks: list your inbox, claim, release, delegate, comment on and complete tasks"}
	o.register(cmd)
	var user, groups string
	cmd.PersistentFlags().StringVar(&user, "user", "", "who acts, on a server without access control (one with it goes by your login)")
	cmd.PersistentFlags().StringVar(&groups, "groups", "", "their groups, comma-separated (likewise)")
	caller := func() api.TaskCaller {
		c := api.TaskCaller{User: user}
		if groups != "" {
			c.Groups = strings.Split(groups, ",")
		}
		return c
	}
	ref := func(id string) api.TaskRef { return api.TaskRef{Namespace: o.namespace, TaskID: id} }

	var status, parentType string
	var mine bool
	var priority int8
	list := &cobra.Command{
		Use: "list", Short: "List tasks: yours (those you may claim or hold) or, for the namespace's admins, all", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			l, err := svc.ListTasks(cmd.Context(), api.ListTasksRequest{Namespace: o.namespace, Status: status, Mine: mine, Priority: priority,
				ParentWorkflowType: parentType, TaskCaller: caller()})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), l, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "TASK\tTITLE\tSTATUS\tASSIGNEE\tCANDIDATES\tPRIORITY\tDUE")
				for _, t := range l.Tasks {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", t.TaskID, t.Title, t.Status, t.Assignee, candidates(t.Candidates), t.Priority, dueText(t.DueAt, t.Overdue))
				}
			})
		},
	}
	list.Flags().StringVar(&status, "status", "", "open (default: open and claimed), claimed or closed")
	list.Flags().BoolVar(&mine, "mine", false, "only the tasks you may claim or hold, admin or not")
	list.Flags().Int8Var(&priority, "priority", 0, "only this priority, 1 (highest) to 5")
	list.Flags().StringVar(&parentType, "workflow-type", "", "only the tasks asked for by runs of this type")

	show := &cobra.Command{
		Use: "show TASK_ID", Short: "Show a task: its description, form, data, candidates, comments and actions", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			t, err := svc.DescribeTask(cmd.Context(), api.DescribeTaskRequest{TaskRef: ref(args[0]), TaskCaller: caller()})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), t, func(tw *tabwriter.Writer) { describeTask(tw, t) })
		},
	}

	act := func(use, short string, args cobra.PositionalArgs, fill func(req *api.TaskActionRequest, args []string) error) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, Args: args,
			RunE: func(cmd *cobra.Command, args []string) error {
				svc, err := o.service()
				if err != nil {
					return err
				}
				req := api.TaskActionRequest{TaskRef: ref(args[0]), TaskCaller: caller()}
				if err := fill(&req, args); err != nil {
					return err
				}
				t, err := svc.ActOnTask(cmd.Context(), req)
				if err != nil {
					return err
				}
				return o.print(cmd.OutOrStdout(), t, func(tw *tabwriter.Writer) {
					switch {
					case req.Action == api.TaskActionComplete && t.Outcome != nil:
						// Who completed it, not who held it: an admin may
						// complete a task another user claimed.
						fmt.Fprintf(tw, "task %s: %s by %s, outcome %s\n", t.TaskID, t.Status, t.Outcome.By, t.Outcome.Outcome)
					case req.Action == api.TaskActionComplete:
						fmt.Fprintf(tw, "task %s: the completion is sent; the task has not taken it yet\n", t.TaskID)
					case t.Assignee != "":
						fmt.Fprintf(tw, "task %s: %s by %s\n", t.TaskID, t.Status, t.Assignee)
					default:
						fmt.Fprintf(tw, "task %s: %s\n", t.TaskID, t.Status)
					}
				})
			},
		}
	}
	claim := act("claim TASK_ID", "Claim a task you may do", cobra.ExactArgs(1), func(req *api.TaskActionRequest, _ []string) error {
		req.Action = api.TaskActionClaim
		return nil
	})
	release := act("release TASK_ID", "Give a task you hold back to its candidates", cobra.ExactArgs(1), func(req *api.TaskActionRequest, _ []string) error {
		req.Action = api.TaskActionRelease
		return nil
	})
	delegate := act("delegate TASK_ID USER", "Hand a task you hold to another user", cobra.ExactArgs(2), func(req *api.TaskActionRequest, args []string) error {
		req.Action, req.To = api.TaskActionDelegate, args[1]
		return nil
	})
	comment := act("comment TASK_ID TEXT", "Comment on a task", cobra.ExactArgs(2), func(req *api.TaskActionRequest, args []string) error {
		req.Action, req.Text = api.TaskActionComment, args[1]
		return nil
	})
	var outcome, data string
	complete := act("complete TASK_ID", "Complete a task you hold, with an outcome and the data its form asks for", cobra.ExactArgs(1), func(req *api.TaskActionRequest, _ []string) error {
		raw, err := jsonOrFileArg("data", data)
		if err != nil {
			return err
		}
		req.Action, req.Outcome, req.Data = api.TaskActionComplete, outcome, raw
		return nil
	})
	complete.Flags().StringVar(&outcome, "outcome", "", "the outcome (default: the task's only one)")
	complete.Flags().StringVar(&data, "data", "", "the form's data: JSON, or @FILE")
	complete.Example = `  strand task complete strand-task:… --outcome approve --data '{"amount": 120}' --user alice`
	cmd.AddCommand(list, show, claim, release, delegate, comment, complete)
	return cmd
}

// dueText is a due time as lists and show print it, marked when overdue.
func dueText(due time.Time, overdue bool) string {
	if due.IsZero() {
		return ""
	}
	if overdue {
		return due.Format(time.RFC3339) + " (overdue)"
	}
	return due.Format(time.RFC3339)
}

// candidates is a task's candidates on one line.
func candidates(c api.TaskCandidates) string {
	var parts []string
	parts = append(parts, c.Users...)
	for _, g := range c.Groups {
		parts = append(parts, "group:"+g)
	}
	return strings.Join(parts, ",")
}

// describeTask prints a task for people.
func describeTask(tw *tabwriter.Writer, t api.HumanTask) {
	o := t.Options
	fmt.Fprintf(tw, "Task:\t%s\n", t.TaskID)
	fmt.Fprintf(tw, "Title:\t%s\n", o.Title)
	if o.Description != "" {
		fmt.Fprintf(tw, "Description:\t%s\n", o.Description)
	}
	fmt.Fprintf(tw, "Status:\t%s\n", t.Status)
	if t.Assignee != "" {
		fmt.Fprintf(tw, "Assignee:\t%s\n", t.Assignee)
	}
	fmt.Fprintf(tw, "Candidates:\t%s\n", candidates(t.Candidates))
	fmt.Fprintf(tw, "Asked by:\t%s %s (%s)\n", t.Parent.WorkflowID, t.Parent.RunID, t.ParentWorkflowType)
	fmt.Fprintf(tw, "Created:\t%s\n", t.Created.Format(time.RFC3339))
	if !t.DueAt.IsZero() {
		fmt.Fprintf(tw, "Due:\t%s\n", dueText(t.DueAt, t.Overdue))
	}
	fmt.Fprintf(tw, "Outcomes:\t%s\n", strings.Join(o.Outcomes, ", "))
	if len(o.Data) > 0 {
		fmt.Fprintf(tw, "Data:\t%s\n", o.Data)
	}
	if len(o.Form) > 0 {
		fmt.Fprintf(tw, "Form:\t%s\n", o.Form)
	}
	for _, c := range t.Comments {
		fmt.Fprintf(tw, "Comment:\t%s %s: %s\n", c.At.Format(time.RFC3339), c.By, c.Text)
	}
	for _, a := range t.Actions {
		to := ""
		if a.To != "" {
			to = " to " + a.To
		}
		fmt.Fprintf(tw, "Action:\t%s %s by %s%s\n", a.At.Format(time.RFC3339), a.Kind, a.By, to)
	}
	if out := t.Outcome; out != nil {
		fmt.Fprintf(tw, "Outcome:\t%s by %s at %s %s\n", out.Outcome, out.By, out.At.Format(time.RFC3339), out.Data)
	}
}
