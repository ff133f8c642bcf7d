package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/server"
)

// newAlertGroupCommand is strand alert-group: who the DAGs' alerts go to
// (a DAG names its group in warning.group).
func newAlertGroupCommand() *cobra.Command {
	var o cliOptions
	cmd := &cobra.Command{Use: "alert-group", Short: "Manage the alert groups DAGs send their alerts to: users and addresses to email, and webhooks"}
	o.register(cmd)

	var g dag.AlertGroup
	var headers []string
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Create or replace an alert group (the whole group: what the flags do not name is no longer in it)",
		Args:  cobra.ExactArgs(1),
		Example: "  strand alert-group set data-team --user alice --email oncall@example.com --cc lead@example.com\n" +
			"  strand alert-group set data-team --webhook https://hooks.example.com/strand --header 'Authorization=Bearer xyz'",
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			h, err := keyValues("header", headers)
			if err != nil {
				return err
			}
			g.Headers = h
			info, err := svc.SetAlertGroup(cmd.Context(), args[0], server.AlertGroupSet{AlertGroup: g, Identity: cliIdentity()})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), info, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "alert group %s: %s\n", info.Name, describeChannels(info.AlertGroup))
			})
		},
	}
	set.Flags().StringArrayVar(&g.Users, "user", nil, "a Strand user to email, at the address the user has (repeat)")
	set.Flags().StringArrayVar(&g.Emails, "email", nil, "an address to email (repeat)")
	set.Flags().StringArrayVar(&g.CC, "cc", nil, "an address copied on each email (repeat)")
	set.Flags().StringVar(&g.URL, "webhook", "", "a webhook's URL: each alert is posted to it as JSON")
	set.Flags().StringArrayVar(&headers, "header", nil, "a header NAME=VALUE of each webhook call (repeat)")
	set.Flags().StringVar(&g.Description, "description", "", "what the group is for")

	list := &cobra.Command{
		Use: "list", Short: "List the alert groups", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			all, err := svc.ListAlertGroups(cmd.Context())
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), all, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NAME\tCHANNELS\tRECIPIENTS")
				for _, g := range all {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Name, strings.Join(g.Channels, ","), describeChannels(g.AlertGroup))
				}
			})
		},
	}

	show := &cobra.Command{
		Use: "show NAME", Short: "Show an alert group and the last alerts it sent", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			d, err := svc.GetAlertGroup(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), d, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "Alert group:\t%s\n", d.Name)
				if d.Description != "" {
					fmt.Fprintf(tw, "Description:\t%s\n", d.Description)
				}
				fmt.Fprintf(tw, "Users:\t%s\n", orNone(d.Users))
				fmt.Fprintf(tw, "Emails:\t%s\n", orNone(d.Emails))
				fmt.Fprintf(tw, "Cc:\t%s\n", orNone(d.CC))
				fmt.Fprintf(tw, "Webhook:\t%s\n", orNone([]string{d.URL}))
				if len(d.Headers) > 0 {
					var names []string
					for k := range d.Headers {
						names = append(names, k)
					}
					fmt.Fprintf(tw, "Headers:\t%s (values not shown)\n", strings.Join(names, ", "))
				}
				fmt.Fprintf(tw, "Changed:\t%s by %s\n", d.ModifiedAt.Format("2006-01-02 15:04:05 MST"), d.ModifiedBy)
				if len(d.Recent) == 0 {
					fmt.Fprintln(tw, "Recent alerts:\tnone")
					return
				}
				fmt.Fprintln(tw, "\nTIME\tEVENT\tDAG\tINSTANCE\tTASK\tCHANNELS")
				for _, s := range d.Recent {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Alert.Time.Format("2006-01-02 15:04:05 MST"), s.Alert.Event,
						orDash(s.Alert.DAG), orDash(s.Alert.Instance), orDash(s.Alert.Task), channelOutcomes(s.Results))
				}
			})
		},
	}

	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete an alert group: the DAGs that name it send no more alerts", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if err := svc.DeleteAlertGroup(cmd.Context(), args[0], cliIdentity()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted alert group %s\n", args[0])
			return nil
		},
	}

	test := &cobra.Command{
		Use: "test NAME", Short: "Send a test alert through each of a group's channels and say what each answered (fails if one did not deliver)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			results, err := svc.TestAlertGroup(cmd.Context(), args[0], cliIdentity())
			if err != nil {
				return err
			}
			var failed []string
			for _, r := range results {
				if !r.Delivered {
					failed = append(failed, r.Channel)
				}
			}
			err = o.print(cmd.OutOrStdout(), results, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "CHANNEL\tTO\tDELIVERED\tANSWER")
				for _, r := range results {
					fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", r.Channel, strings.Join(r.To, ", "), r.Delivered, r.Answer)
				}
			})
			if err == nil && len(failed) > 0 {
				err = fmt.Errorf("alert group %s: the test alert was not delivered by %s", args[0], strings.Join(failed, ", "))
			}
			return err
		},
	}
	cmd.AddCommand(set, list, show, del, test)
	return cmd
}

// describeChannels says in a line who a group's alerts go to.
func describeChannels(g dag.AlertGroup) string {
	var parts []string
	if len(g.Users)+len(g.Emails) > 0 {
		s := "email to " + strings.Join(append(append([]string{}, g.Users...), g.Emails...), ", ")
		if len(g.CC) > 0 {
			s += " (cc " + strings.Join(g.CC, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if g.URL != "" {
		parts = append(parts, "webhook "+g.URL)
	}
	return strings.Join(parts, "; ")
}

// channelOutcomes says how each channel of a sent alert went.
func channelOutcomes(rs []dag.ChannelResult) string {
	var parts []string
	for _, r := range rs {
		if r.Delivered {
			parts = append(parts, r.Channel+" delivered")
		} else {
			parts = append(parts, r.Channel+" failed: "+r.Answer)
		}
	}
	return strings.Join(parts, "; ")
}

func orNone(list []string) string {
	s := strings.Join(list, ", ")
	if s == "" {
		return "none"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
