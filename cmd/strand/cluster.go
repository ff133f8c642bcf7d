package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newClusterCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "cluster", Short: "Show a cluster's nodes and where its shards are"}
	o.register(cmd)
	var all bool
	nodes := &cobra.Command{
		Use: "nodes", Short: "List the live nodes (all known ones with --all)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			list, err := svc.ListNodes(cmd.Context(), all)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), list, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "ID\tADDRESS\tHOST\tPID\tSTARTED\tEXPIRES")
				for _, n := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", n.ID, n.Address, n.Host, n.PID,
						n.StartedAt.Format(time.RFC3339), n.ExpiresAt.Format(time.RFC3339))
				}
			})
		},
	}
	nodes.Flags().BoolVar(&all, "all", false, "include nodes whose heartbeat has expired")
	shards := &cobra.Command{
		Use: "shards", Short: "List the shards: their owner and range_id in the store, and whether the node asked serves each", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			list, err := svc.ListShards(cmd.Context())
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), list, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "SHARD\tOWNER\tRANGE_ID\tSERVED_HERE")
				for _, s := range list {
					fmt.Fprintf(tw, "%d\t%s\t%d\t%v\n", s.ID, s.Owner, s.RangeID, s.Serving)
				}
			})
		},
	}
	cmd.AddCommand(nodes, shards)
	return cmd
}
