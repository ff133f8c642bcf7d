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
	cmd.AddCommand(create, describe, list, update)
	return cmd
}
