package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/api"
)

func newNamespaceCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "namespace", Short: "Create, show and change namespaces on a server"}
	o.register(cmd)
	var (
		description string
		retention   time.Duration
	)
	show := func(cmd *cobra.Command, n api.Namespace) error {
		return o.print(cmd.OutOrStdout(), n, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "name\t%s\ndescription\t%s\nretention\t%s\nversion\t%d\n", n.Name, n.Description, n.Retention, n.Version)
		})
	}
	create := &cobra.Command{
		Use: "create NAME", Short: "Create a namespace", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			n, err := svc.CreateNamespace(cmd.Context(), api.Namespace{Name: args[0], Description: description, Retention: retention})
			if err != nil {
				return err
			}
			return show(cmd, n)
		},
	}
	var (
		startsPerSecond float64
		startBurst      int32
		openRuns        int64
		maxPayload      int64
		maxHistory      int64
	)
	quotas := &cobra.Command{
		Use: "quotas NAME", Short: "Show a namespace's quotas, or set them with the flags (cluster admins; 0: no bound)", Args: cobra.ExactArgs(1),
		Example: "  strand namespace quotas payments\n  strand namespace quotas payments --starts-per-second 100 --open-runs 100000 --max-payload 1048576",
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			q, err := svc.GetQuotas(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if f := cmd.Flags(); f.Changed("starts-per-second") || f.Changed("start-burst") || f.Changed("open-runs") || f.Changed("max-payload") || f.Changed("max-history-events") {
				if f.Changed("starts-per-second") {
					q.StartsPerSecond = startsPerSecond
				}
				if f.Changed("start-burst") {
					q.StartBurst = startBurst
				}
				if f.Changed("open-runs") {
					q.OpenRuns = openRuns
				}
				if f.Changed("max-payload") {
					q.MaxPayload = maxPayload
				}
				if f.Changed("max-history-events") {
					q.MaxHistoryEvents = maxHistory
				}
				if q, err = svc.SetQuotas(cmd.Context(), args[0], q); err != nil {
					return err
				}
			}
			return o.print(cmd.OutOrStdout(), q, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "starts per second\t%v\nstart burst\t%d\nopen runs\t%d\nmax payload\t%d\nmax history events\t%d\n",
					q.StartsPerSecond, q.StartBurst, q.OpenRuns, q.MaxPayload, q.MaxHistoryEvents)
			})
		},
	}
	quotas.Flags().Float64Var(&startsPerSecond, "starts-per-second", 0, "workflows started through the API per second, per node")
	quotas.Flags().Int32Var(&startBurst, "start-burst", 0, "starts at once (default: the rate)")
	quotas.Flags().Int64Var(&openRuns, "open-runs", 0, "open runs of the namespace")
	quotas.Flags().Int64Var(&maxPayload, "max-payload", 0, "bytes of a start's input or a signal's value")
	quotas.Flags().Int64Var(&maxHistory, "max-history-events", 0, "events of a run's history (a run past it is terminated)")
	update := &cobra.Command{
		Use: "update NAME", Short: "Change a namespace's description or retention", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			n, err := svc.DescribeNamespace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("description") {
				n.Description = description
			}
			if cmd.Flags().Changed("retention") {
				n.Retention = retention
			}
			if n, err = svc.UpdateNamespace(cmd.Context(), n); err != nil {
				return err
			}
			return show(cmd, n)
		},
	}
	for _, c := range []*cobra.Command{create, update} {
		c.Flags().StringVar(&description, "description", "", "what the namespace is for")
		c.Flags().DurationVar(&retention, "retention", 0, "how long closed runs are kept (default 72h)")
	}
	describe := &cobra.Command{
		Use: "describe NAME", Short: "Show a namespace", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			n, err := svc.DescribeNamespace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return show(cmd, n)
		},
	}
	list := &cobra.Command{
		Use: "list", Short: "List namespaces", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			all, err := svc.ListNamespaces(cmd.Context())
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), all, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NAME\tRETENTION\tDESCRIPTION")
				for _, n := range all {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Name, n.Retention, n.Description)
				}
			})
		},
	}
	cmd.AddCommand(create, describe, list, update, quotas)
	return cmd
}
