package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/internal/certs"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/store"
)

// cliOptions are the flags every command that talks to a server shares.
type cliOptions struct {
	// servers are the --server URLs as given (repeated or comma-separated):
	// a server, or nodes of a cluster.
	servers []string
	// urls are the servers' URLs, one each, and server the same joined,
	// for messages: both set by service.
	urls      []string
	server    string
	namespace string
	output    string
	// retryFor bounds how long a failing call is retried (0: until the
	// command is interrupted).
	retryFor time.Duration
	// token is the API token sent ("": the one strand login kept for the
	// server, if any; "-": none).
	token string
	// caFile, certFile and keyFile configure TLS to an https:// server.
	caFile, certFile, keyFile string
	// resolveEvery, above zero, resolves the servers' host names that
	// often, each address a node.
	resolveEvery time.Duration
	// plainTaskCalls sends each task poll and report on its own, not in
	// task exchanges (strand bench --plain-task-calls).
	plainTaskCalls bool
	// postedExchanges POSTs the task exchanges, each a request, rather
	// than sending them on task streams.
	postedExchanges bool
}

func (o *cliOptions) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringSliceVar(&o.servers, "server", []string{envOr("STRAND_SERVER", "http://127.0.0.1:8233")},
		"the server's URL; for a cluster, several of its nodes (repeat or comma-separate): calls go to a live one and move on when one fails (env STRAND_SERVER)")
	cmd.PersistentFlags().DurationVar(&o.resolveEvery, "resolve-every", 0,
		"resolve the host name of each --server this often and call each of its addresses as a node of the cluster (0: call the name as it is)")
	cmd.PersistentFlags().StringVar(&o.namespace, "namespace", api.DefaultNamespace, "namespace")
	cmd.PersistentFlags().StringVarP(&o.output, "output", "o", "table", "output: table or json")
	cmd.PersistentFlags().DurationVar(&o.retryFor, "retry-for", 30*time.Second,
		"how long a call is retried while the server cannot be reached or is unavailable (0: until interrupted)")
	cmd.PersistentFlags().StringVar(&o.caFile, "ca-file", os.Getenv("STRAND_CA_FILE"), "the PEM CA bundle an https:// server's certificate is checked against (env STRAND_CA_FILE; default: the system's roots)")
	cmd.PersistentFlags().StringVar(&o.certFile, "cert-file", os.Getenv("STRAND_CERT_FILE"), "a PEM client certificate to call with, for a server that takes them (env STRAND_CERT_FILE)")
	cmd.PersistentFlags().StringVar(&o.keyFile, "key-file", os.Getenv("STRAND_KEY_FILE"), "the PEM key of --cert-file (env STRAND_KEY_FILE)")
	cmd.PersistentFlags().StringVar(&o.token, "token", os.Getenv("STRAND_TOKEN"), "the API token to call with (env STRAND_TOKEN; default: the one strand login kept for --server)")
}

// cliIdentity names who runs the command, for the history of what it
// changes: "strand-cli:USER@HOST".
func cliIdentity() string {
	host, _ := os.Hostname()
	who := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	return fmt.Sprintf("strand-cli:%s@%s", who, host)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (o *cliOptions) service() (*remote.Service, error) {
	if o.output != "table" && o.output != "json" {
		return nil, &usageError{fmt.Errorf("--output %q: want table or json", o.output)}
	}
	for _, entry := range o.servers {
		for _, u := range strings.Split(entry, ",") {
			if u = strings.TrimSpace(u); !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				return nil, &usageError{fmt.Errorf("--server %q: want http://HOST:PORT (several: repeat --server or comma-separate)", u)}
			}
		}
	}
	urls, err := remote.ParseURLs(o.servers...)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--server: %w", err)}
	}
	o.urls, o.server = urls, strings.Join(urls, ",")
	token := o.token
	switch token {
	case "":
		// The one strand login kept for one of them.
		for _, u := range urls {
			if token = loadCredential(u); token != "" {
				break
			}
		}
	case "-":
		token = ""
	}
	var tlsConfig *tls.Config
	if o.caFile != "" || o.certFile != "" || o.keyFile != "" {
		var err error
		if tlsConfig, err = certs.ClientConfig(o.caFile, o.certFile, o.keyFile); err != nil {
			return nil, &usageError{fmt.Errorf("--ca-file, --cert-file, --key-file: %v", err)}
		}
	}
	svc, err := remote.NewCluster(urls, remote.Options{Retry: remote.RetryPolicy{MaxElapsed: o.retryFor}, Token: token, TLS: tlsConfig,
		ResolveEvery: o.resolveEvery, PlainTaskCalls: o.plainTaskCalls, PostedExchanges: o.postedExchanges})
	if err != nil {
		return nil, &usageError{fmt.Errorf("--server: %w", err)}
	}
	return svc, nil
}

func (o *cliOptions) ref(id, run string) api.RunRef {
	return api.RunRef{Namespace: o.namespace, WorkflowID: id, RunID: run}
}

// print writes v as JSON, or calls table for people.
func (o *cliOptions) print(w io.Writer, v any, table func(tw *tabwriter.Writer)) error {
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// orNew returns id, or a new random one when it is empty: every mutating
// call carries a request id, so the client retries it safely.
func orNew(id string) string {
	if id == "" {
		return uuid.NewString()
	}
	return id
}

// pageToken reads --page-token: the token as the API's JSON gives it (and
// as the list commands print it), or as older versions printed it.
func pageToken(flag string) ([]byte, error) {
	token, err := base64.StdEncoding.DecodeString(flag)
	if err != nil {
		token, err = base64.RawURLEncoding.DecodeString(flag)
	}
	if err != nil {
		return nil, &usageError{fmt.Errorf("--page-token: not a token this command printed")}
	}
	return token, nil
}

// printMore prints how to get the page after a list's, if there is one.
func printMore(tw *tabwriter.Writer, next []byte) {
	if len(next) > 0 {
		fmt.Fprintf(tw, "\nmore: --page-token %s\n", base64.StdEncoding.EncodeToString(next))
	}
}

// jsonArg checks that a command-line value is JSON (workflow and signal
// inputs are JSON, as the SDK encodes them).
func jsonArg(flag, v string) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	if !json.Valid([]byte(v)) {
		return nil, &usageError{fmt.Errorf("--%s: not valid JSON: %s", flag, v)}
	}
	return []byte(v), nil
}

func newWorkflowCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "workflow", Short: "Start and manage workflows on a server"}
	o.register(cmd)
	var run string
	runFlag := func(c *cobra.Command) {
		c.Flags().StringVar(&run, "run-id", "", "the run (default: the workflow's current run)")
	}

	var typ, input, queue, reuse, requestID string
	var delay, timeout time.Duration
	start := &cobra.Command{
		Use: "start WORKFLOW_ID", Short: "Start a workflow", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			in, err := jsonArg("input", input)
			if err != nil {
				return err
			}
			policy, ok := map[string]api.IDReusePolicy{"allow-duplicate": api.AllowDuplicate, "allow-duplicate-failed-only": api.AllowDuplicateFailedOnly,
				"reject-duplicate": api.RejectDuplicate, "terminate-if-running": api.TerminateIfRunning}[reuse]
			if !ok {
				return &usageError{fmt.Errorf("--id-reuse %q: want allow-duplicate, allow-duplicate-failed-only, reject-duplicate or terminate-if-running", reuse)}
			}
			resp, err := svc.StartWorkflow(cmd.Context(), api.StartRequest{Namespace: o.namespace, WorkflowID: args[0], WorkflowType: typ, Input: in,
				Queue: queue, RequestID: orNew(requestID), IDReuse: policy, StartDelay: delay, RunTimeout: timeout, Identity: cliIdentity()})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), resp, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "WORKFLOW\tRUN\tSTARTED\n%s\t%s\t%v\n", args[0], resp.RunID, resp.Started)
			})
		},
	}
	start.Flags().StringVar(&typ, "type", "", "workflow type (required)")
	start.Flags().StringVar(&input, "input", "", "input as JSON")
	start.Flags().StringVar(&queue, "queue", "", "task queue")
	start.Flags().StringVar(&reuse, "id-reuse", "allow-duplicate", "id reuse policy")
	start.Flags().StringVar(&requestID, "request-id", "", "request id (a retried start with the same id returns the same run)")
	start.Flags().DurationVar(&delay, "start-delay", 0, "start after this delay")
	start.Flags().DurationVar(&timeout, "run-timeout", 0, "the run's timeout")
	start.MarkFlagRequired("type")

	var signalInput string
	signal := &cobra.Command{
		Use: "signal WORKFLOW_ID SIGNAL", Short: "Send a signal", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			in, err := jsonArg("input", signalInput)
			if err != nil {
				return err
			}
			return svc.SignalWorkflow(cmd.Context(), api.SignalRequest{RunRef: o.ref(args[0], run), Name: args[1], Input: in, RequestID: orNew(requestID), Identity: cliIdentity()})
		},
	}
	signal.Flags().StringVar(&signalInput, "input", "", "signal value as JSON")
	signal.Flags().StringVar(&requestID, "request-id", "", "request id (a signal sent again with the same id is delivered once)")
	runFlag(signal)

	var reason string
	cancel := &cobra.Command{
		Use: "cancel WORKFLOW_ID", Short: "Ask a run to cancel", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			return svc.CancelWorkflow(cmd.Context(), api.CancelRequest{RunRef: o.ref(args[0], run), Reason: reason, RequestID: orNew(requestID), Identity: cliIdentity()})
		},
	}
	terminate := &cobra.Command{
		Use: "terminate WORKFLOW_ID", Short: "Terminate a run", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			return svc.TerminateWorkflow(cmd.Context(), api.TerminateRequest{RunRef: o.ref(args[0], run), Reason: reason, RequestID: orNew(requestID), Identity: cliIdentity()})
		},
	}
	for _, c := range []*cobra.Command{cancel, terminate} {
		c.Flags().StringVar(&reason, "reason", "", "why")
		c.Flags().StringVar(&requestID, "request-id", "", "request id (sent again with the same id, it is applied once and answers as the first did)")
		runFlag(c)
	}

	var queryInput string
	query := &cobra.Command{
		Use: "query WORKFLOW_ID QUERY", Short: "Query a run", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			in, err := jsonArg("input", queryInput)
			if err != nil {
				return err
			}
			out, err := svc.QueryWorkflow(cmd.Context(), api.QueryRequest{RunRef: o.ref(args[0], run), Name: args[1], Input: in})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(out))
			return nil
		},
	}
	query.Flags().StringVar(&queryInput, "input", "", "query argument as JSON")
	runFlag(query)

	describe := &cobra.Command{
		Use: "describe WORKFLOW_ID", Short: "Show a run with its pending steps, timers and children", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			d, err := svc.DescribeWorkflow(cmd.Context(), o.ref(args[0], run))
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), d, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "workflow\t%s\nrun\t%s\ntype\t%s\nstatus\t%s\nqueue\t%s\nstarted\t%s\n", d.WorkflowID, d.RunID, d.WorkflowType, d.Status, d.Queue, d.StartTime.Format(time.RFC3339Nano))
				if !d.CloseTime.IsZero() {
					fmt.Fprintf(tw, "closed\t%s\n", d.CloseTime.Format(time.RFC3339Nano))
				}
				if p := d.Paused; p != nil {
					fmt.Fprintf(tw, "paused\tby %s at %s: %s\n", p.Identity, p.Time.Format(time.RFC3339), p.Reason)
				}
				for _, s := range d.Steps {
					fmt.Fprintf(tw, "step #%d\t%s %s attempt %d %s\n", s.Seq, s.Name, s.State, s.Attempt, s.LastFailure)
				}
				for _, tm := range d.Timers {
					fmt.Fprintf(tw, "timer #%d\tfires %s\n", tm.Seq, tm.FireTime.Format(time.RFC3339Nano))
				}
				for _, c := range d.Children {
					fmt.Fprintf(tw, "child #%d\t%s %s %s\n", c.Seq, c.WorkflowType, c.WorkflowID, c.RunID)
				}
				if f := d.WorkflowTaskFailure; f != nil {
					fmt.Fprintf(tw, "task failure\t%s: %s\n", f.Kind, f.Message)
				}
			})
		},
	}
	runFlag(describe)

	var statuses, listAttrs []string
	var wfType, pageTokenFlag, idPrefix, keyPrefix string
	var limit int
	list := &cobra.Command{
		Use: "list", Short: "List runs", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			token, err := pageToken(pageTokenFlag)
			if err != nil {
				return err
			}
			attrs, err := keyValues("attribute", listAttrs)
			if err != nil {
				return err
			}
			req := api.ListRequest{Namespace: o.namespace, WorkflowType: wfType, WorkflowIDPrefix: idPrefix,
				BusinessKeyPrefix: keyPrefix, Attributes: attrs, PageSize: limit, PageToken: token}
			for _, s := range statuses {
				st, err := store.ParseRunStatus(s)
				if err != nil {
					return &usageError{err}
				}
				req.Statuses = append(req.Statuses, st)
			}
			page, err := svc.ListWorkflows(cmd.Context(), req)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), page, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "WORKFLOW\tRUN\tTYPE\tSTATUS\tSTARTED\tCLOSED")
				for _, r := range page.Runs {
					closed := ""
					if !r.CloseTime.IsZero() {
						closed = r.CloseTime.Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.WorkflowID, r.RunID, r.Type, r.Status, r.StartTime.Format(time.RFC3339), closed)
				}
				printMore(tw, page.NextPageToken)
			})
		},
	}
	list.Flags().StringSliceVar(&statuses, "status", nil, "only these statuses (running, completed, failed, canceled, terminated, continued_as_new, timed_out)")
	list.Flags().StringVar(&wfType, "type", "", "only this workflow type")
	list.Flags().StringVar(&idPrefix, "workflow-id-prefix", "", "only runs whose workflow id starts with this")
	list.Flags().StringVar(&keyPrefix, "business-key-prefix", "", "only runs whose business key starts with this")
	list.Flags().StringArrayVar(&listAttrs, "attribute", nil, "only runs with this attribute NAME=VALUE (repeat: all of them)")
	list.Flags().IntVar(&limit, "limit", 100, "at most this many runs (a page)")
	list.Flags().StringVar(&pageTokenFlag, "page-token", "", "the page after the one that printed this token")

	var details bool
	history := &cobra.Command{
		Use: "history WORKFLOW_ID", Short: "Print a run's history, one event a line", Args: cobra.ExactArgs(1),
		Long: "Print a run's history, one event a line. An event with audit details names them (details=NAME,...);\n" +
			"--details loads them, large ones from their documents, and prints each under its event.",
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			var all []api.Event
			var token []byte
			for {
				page, err := svc.GetHistory(cmd.Context(), api.HistoryRequest{RunRef: o.ref(args[0], run), PageToken: token, ResolveDetails: details})
				if err != nil {
					return err
				}
				all = append(all, page.Events...)
				if token = page.NextPageToken; len(token) == 0 {
					break
				}
			}
			return o.print(cmd.OutOrStdout(), all, func(tw *tabwriter.Writer) {
				for _, e := range all {
					fmt.Fprintln(tw, e.Summary())
					if details {
						for _, d := range e.Details {
							printDetail(tw, d)
						}
					}
				}
			})
		},
	}
	runFlag(history)
	history.Flags().BoolVar(&details, "details", false, "print the events' audit details (loading the large ones)")

	var wait time.Duration
	result := &cobra.Command{
		Use: "result WORKFLOW_ID", Short: "Wait for a run's result", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if wait > 0 {
				var cancel func()
				ctx, cancel = context.WithTimeout(ctx, wait)
				defer cancel()
			}
			res, err := svc.WaitResult(ctx, api.ResultRequest{RunRef: o.ref(args[0], run), FollowRuns: true})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), res, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "run\t%s\nstatus\t%s\n", res.RunID, res.Status)
				if len(res.Output) > 0 {
					fmt.Fprintf(tw, "output\t%s\n", res.Output)
				}
				if res.Failure != nil {
					fmt.Fprintf(tw, "failure\t%s\n", res.Failure.Error())
				}
			})
		},
	}
	result.Flags().DurationVar(&wait, "wait", 0, "give up after this long (default: wait until it closes)")
	runFlag(result)

	pauseCmd := func(pause bool) *cobra.Command {
		var reason string
		use, short, done := "pause", "Pause a run: no workflow task or step is dispatched until resume (running steps finish, timers fire; the workflow sees it all on resume)", "paused"
		if !pause {
			use, short, done = "resume", "Resume a paused run", "resumed"
		}
		c := &cobra.Command{
			Use: use + " WORKFLOW_ID", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				svc, err := o.service()
				if err != nil {
					return err
				}
				req := api.PauseRequest{RunRef: o.ref(args[0], run), Reason: reason, Identity: cliIdentity()}
				if pause {
					err = svc.PauseWorkflow(cmd.Context(), req)
				} else {
					err = svc.ResumeWorkflow(cmd.Context(), req)
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", done, args[0])
				return nil
			},
		}
		runFlag(c)
		c.Flags().StringVar(&reason, "reason", "", "why, for the run's history")
		return c
	}
	var point, resetReason string
	var eventID int64
	var skipSignals bool
	reset := &cobra.Command{
		Use: "reset WORKFLOW_ID", Short: "Start a new run that continues from a point of the current run's history (the old run, if open, is terminated)", Args: cobra.ExactArgs(1),
		Long: "Reset goes back to just before a workflow task and runs it again in a new run of the workflow id, with\n" +
			"the history before it, its pending steps and timers, and (unless --skip-signals) the signals received after it.\n" +
			"--point last-workflow-task: run the last workflow task again (after a fix of the workflow's code)\n" +
			"--point first-failed-step: go back to before the first failed step, which runs again\n" +
			"--point before-event --event-id N: go back to the last workflow task before event N",
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			p, ok := map[string]api.ResetPoint{"last-workflow-task": api.ResetLastWorkflowTask, "first-failed-step": api.ResetFirstFailedStep,
				"before-event": api.ResetBeforeEvent}[point]
			if !ok {
				return &usageError{fmt.Errorf("--point %q: want last-workflow-task, first-failed-step or before-event", point)}
			}
			resp, err := svc.ResetWorkflow(cmd.Context(), api.ResetRequest{RunRef: o.ref(args[0], run), Point: p, EventID: eventID,
				SkipSignals: skipSignals, Reason: resetReason, Identity: cliIdentity()})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), resp, func(tw *tabwriter.Writer) { fmt.Fprintf(tw, "reset %s: new run %s\n", args[0], resp.RunID) })
		},
	}
	runFlag(reset)
	reset.Flags().StringVar(&point, "point", "last-workflow-task", "where to go back to: last-workflow-task, first-failed-step or before-event")
	reset.Flags().Int64Var(&eventID, "event-id", 0, "with --point before-event: the event")
	reset.Flags().BoolVar(&skipSignals, "skip-signals", false, "leave out the signals received after the point")
	reset.Flags().StringVar(&resetReason, "reason", "", "why, for both runs' histories")

	var rerunRequestID string
	rerun := &cobra.Command{
		Use: "rerun WORKFLOW_ID", Short: "Start a closed run again, with its type, input and options", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			resp, err := svc.RerunWorkflow(cmd.Context(), api.RerunRequest{RunRef: o.ref(args[0], run), RequestID: orNew(rerunRequestID), Identity: cliIdentity()})
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), resp, func(tw *tabwriter.Writer) { fmt.Fprintf(tw, "rerun %s: new run %s\n", args[0], resp.RunID) })
		},
	}
	runFlag(rerun)
	rerun.Flags().StringVar(&rerunRequestID, "request-id", "", "makes a retried rerun start one run (default: a new id)")
	cmd.AddCommand(start, signal, cancel, terminate, query, describe, list, history, result, pauseCmd(true), pauseCmd(false), reset, rerun)
	return cmd
}

// printDetail prints an audit detail under its event: text as it is, JSON
// indented, each of its lines indented under the event's (tabs as spaces:
// w is a tabwriter).
func printDetail(w io.Writer, d api.EventDetail) {
	const indent = "       "
	var text string
	var buf bytes.Buffer
	switch v := d.Value.Data; {
	case d.Value.Doc != nil:
		text = fmt.Sprintf("document %s (%d bytes)", d.Value.Doc.ID, d.Value.Doc.Size)
	case json.Unmarshal(v, &text) == nil:
	case json.Indent(&buf, v, "", "  ") == nil:
		text = buf.String()
	default:
		text = fmt.Sprintf("%q", v)
	}
	text = strings.ReplaceAll(strings.TrimRight(text, "\n"), "\t", "    ")
	text = strings.ReplaceAll(text, "\n", "\n"+indent+"  ")
	fmt.Fprintf(w, "%s%s: %s\n", indent, d.Name, text)
}
