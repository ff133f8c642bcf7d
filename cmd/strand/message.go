package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/api"
)

func newMessageCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "message", Short: "Send messages that runs wait for by name and correlation key; see what mailboxes keep; set the rules that start runs"}
	o.register(cmd)
	identity := cliIdentity()

	var payload, id string
	var ttl time.Duration
	var broadcast bool
	var priority int8
	send := &cobra.Command{
		Use: "send NAME CORRELATION_KEY", Short: "Send a message: a run waiting for its name and key gets it, or it is kept until one waits", Args: cobra.ExactArgs(2),
		Example: `  strand message send payment-confirmed order-1042 --payload '{"amount": 120}'
  strand message send price-changed sku-7 --payload '9.99' --broadcast --ttl 1h
  strand message send order-placed o-7 --payload @order.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			raw, err := jsonOrFileArg("payload", payload)
			if err != nil {
				return err
			}
			resp, err := svc.SendMessage(cmd.Context(), api.SendMessageRequest{Namespace: o.namespace, Name: args[0], CorrelationKey: args[1],
				Payload: raw, TTL: ttl, Broadcast: broadcast, Priority: priority, MessageID: id, Identity: identity})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), resp, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "sent message %s to the mailbox %s\n", resp.MessageID, resp.Mailbox.WorkflowID)
			})
		},
	}
	send.Flags().StringVar(&payload, "payload", "", "the message's payload: JSON, or @FILE")
	send.Flags().DurationVar(&ttl, "ttl", 0, "how long it is kept while no run waits for it (default 24h)")
	send.Flags().BoolVar(&broadcast, "broadcast", false, "deliver it to every run that waits within its TTL, not to the first only")
	send.Flags().Int8Var(&priority, "priority", 0, "its priority, 1 (highest) to 5; a run it starts under a rule has it")
	send.Flags().StringVar(&id, "id", "", "the message's id: the same id sent again is taken once (default: a new one)")

	var name, pageTokenFlag string
	var limit int
	list := &cobra.Command{
		Use: "list", Short: "List the mailboxes that keep messages or have runs waiting", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			token, err := pageToken(pageTokenFlag)
			if err != nil {
				return err
			}
			page, err := svc.ListMailboxes(cmd.Context(), api.ListMailboxesRequest{Namespace: o.namespace, Name: name, PageSize: limit, PageToken: token})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), page, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NAME\tCORRELATION KEY\tKEPT\tWAITING\tSINCE")
				for _, m := range page.Mailboxes {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", m.Name, m.CorrelationKey, m.Kept, m.Waiting, m.Since.Format(time.RFC3339))
				}
				printMore(tw, page.NextPageToken)
			})
		},
	}
	list.Flags().StringVar(&name, "name", "", "only the mailboxes of this message name")
	list.Flags().IntVar(&limit, "limit", 100, "at most this many mailboxes (a page)")
	list.Flags().StringVar(&pageTokenFlag, "page-token", "", "the page after the one that printed this token")

	show := &cobra.Command{
		Use: "show NAME CORRELATION_KEY", Short: "Show a mailbox: the messages it keeps, the runs waiting, its last deliveries", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			d, err := svc.DescribeMailbox(cmd.Context(), api.MailboxRef{Namespace: o.namespace, Name: args[0], CorrelationKey: args[1]})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), d, func(tw *tabwriter.Writer) { describeMailbox(tw, d) })
		},
	}

	rule := &cobra.Command{Use: "rule", Short: "The rules that make a message no run waits for start a workflow"}
	var ruleType, ruleQueue string
	ruleSet := &cobra.Command{
		Use: "set NAME", Short: "Make messages of NAME that no run waits for start a run of --workflow-type, with the correlation key as its workflow id", Args: cobra.ExactArgs(1),
		Example: `  strand message rule set order-placed --workflow-type Order --queue orders`,
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if ruleType == "" {
				return &usageError{fmt.Errorf("--workflow-type is required")}
			}
			r := api.MessageRule{MessageRuleRef: api.MessageRuleRef{Namespace: o.namespace, Name: args[0]}, WorkflowType: ruleType, Queue: ruleQueue}
			if err := svc.PutMessageRule(cmd.Context(), r); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "messages %s start %s\n", args[0], ruleType)
			return nil
		},
	}
	ruleSet.Flags().StringVar(&ruleType, "workflow-type", "", "the workflow a message starts")
	ruleSet.Flags().StringVar(&ruleQueue, "queue", "", "its task queue (default: default)")
	ruleList := &cobra.Command{
		Use: "list", Short: "List the namespace's message rules", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			rules, err := svc.ListMessageRules(cmd.Context(), o.namespace)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), rules, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "MESSAGE\tWORKFLOW TYPE\tQUEUE")
				for _, r := range rules {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.WorkflowType, r.Queue)
				}
			})
		},
	}
	ruleDelete := &cobra.Command{
		Use: "delete NAME", Short: "Delete the rule of a message name", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if err := svc.DeleteMessageRule(cmd.Context(), api.MessageRuleRef{Namespace: o.namespace, Name: args[0]}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted the rule of %s\n", args[0])
			return nil
		},
	}
	rule.AddCommand(ruleSet, ruleList, ruleDelete)
	cmd.AddCommand(send, list, show, rule)
	return cmd
}

// describeMailbox prints a mailbox for people.
func describeMailbox(tw *tabwriter.Writer, d api.MailboxDescription) {
	fmt.Fprintf(tw, "Name:\t%s\n", d.Name)
	fmt.Fprintf(tw, "Correlation key:\t%s\n", d.CorrelationKey)
	fmt.Fprintf(tw, "Mailbox:\t%s %s\n", d.WorkflowID, d.RunID)
	fmt.Fprintf(tw, "\nKept (%d):\n", len(d.Kept))
	for _, k := range d.Kept {
		kind := ""
		if k.Broadcast {
			kind = fmt.Sprintf(" broadcast to %d", len(k.DeliveredTo))
		}
		fmt.Fprintf(tw, "  %s\tsent %s\texpires %s%s\t%s\n", k.MessageID, k.Sent.Format(time.RFC3339), k.Expires.Format(time.RFC3339), kind, k.Payload)
	}
	fmt.Fprintf(tw, "\nWaiting (%d):\n", len(d.Waiting))
	for _, w := range d.Waiting {
		fmt.Fprintf(tw, "  %s %s\tsince %s\n", w.Run.WorkflowID, w.Run.RunID, w.Since.Format(time.RFC3339))
	}
	if len(d.Delivered) > 0 {
		fmt.Fprintf(tw, "\nDelivered lately:\n")
		for _, e := range d.Delivered {
			how := "to"
			if e.Started {
				how = "started"
			}
			fmt.Fprintf(tw, "  %s\t%s %s %s\t%s\n", e.MessageID, how, e.Run.WorkflowID, e.Run.RunID, e.At.Format(time.RFC3339))
		}
	}
}

// jsonOrFileArg is a flag's JSON: the flag's value, or with @FILE the
// file's content. A file that cannot be read, or that is not JSON, is a
// usage error naming the flag and the file.
func jsonOrFileArg(flag, v string) ([]byte, error) {
	name, ok := strings.CutPrefix(v, "@")
	if !ok {
		return jsonArg(flag, v)
	}
	raw, err := os.ReadFile(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &usageError{fmt.Errorf("--%s: no file %s", flag, name)}
		}
		return nil, &usageError{fmt.Errorf("--%s: %w", flag, err)}
	}
	if !json.Valid(raw) {
		return nil, &usageError{fmt.Errorf("--%s: %s is not valid JSON", flag, name)}
	}
	return raw, nil
}
