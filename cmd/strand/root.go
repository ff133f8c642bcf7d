package main

import (
	"context"
	"fmt"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/store/cassandra"
	"github.com/strandhq/strand/store/postgres"
	"github.com/strandhq/strand/store/sqlite"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "strand",
		Short:         "Strand: durable workflows on SQLite, PostgreSQL or Cassandra",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(newVersionCommand(), newMigrateCommand(), newBenchCommand(), newServerCommand(), newWorkflowCommand(), newNamespaceCommand(), newClusterCommand(), newScheduleCommand(), newMessageCommand(), newTaskCommand(), newBatchCommand(), newDAGCommand(), newTenantCommand(), newAlertGroupCommand(), newWorkerCommand(), newStateMachineCommand(), newSagaCommand(),
		newUserCommand(), newTokenCommand(), newLoginCommand(), newLogoutCommand(), newPasswordCommand(), newWhoAmICommand(), newAuditCommand(),
		newResourceCommand(), newDataSourceCommand(), newUDFCommand())
	// Runnable so that cobra checks its arguments: an unknown command is
	// bad input (status 2), not a reason to print help and succeed.
	root.Args = cobra.NoArgs
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	markArgErrors(root)
	return root
}

// markArgErrors makes every command's argument errors usage errors, so bad
// arguments exit with status 2 like bad flags do.
func markArgErrors(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return &usageError{err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		markArgErrors(sub)
	}
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version
			if info, ok := debug.ReadBuildInfo(); ok && v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
				v = info.Main.Version
			}
			fmt.Fprintf(cmd.OutOrStdout(), "strand %s\n", v)
			return nil
		},
	}
}

func newMigrateCommand() *cobra.Command {
	var storeURL string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the store's schema (safe to run again)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context(), storeURL)
			if err != nil {
				return err
			}
			defer st.Close()
			from, to, err := st.Migrate(cmd.Context())
			if err != nil {
				return err
			}
			if from == to {
				fmt.Fprintf(cmd.OutOrStdout(), "schema is at version %d; nothing to do\n", to)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "schema migrated from version %d to %d\n", from, to)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&storeURL, "store", "sqlite://"+sqlite.DefaultPath,
		"store URL: sqlite://PATH (a file), postgres://USER@HOST:PORT/DB or cassandra://HOST:PORT,.../KEYSPACE")
	return cmd
}

// openStore opens the store a URL names.
func openStore(ctx context.Context, raw string) (store.Store, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, &usageError{fmt.Errorf("--store %q: want sqlite://PATH or postgres://...", raw)}
	}
	switch scheme {
	case "sqlite", "file":
		path, query, _ := strings.Cut(rest, "?")
		if path == "" {
			return nil, &usageError{fmt.Errorf("--store %q: no file path", raw)}
		}
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--store %q: %v", raw, err)}
		}
		for k := range q {
			if k != "synchronous" {
				return nil, &usageError{fmt.Errorf("--store %q: unknown parameter %q (known: synchronous)", raw, k)}
			}
		}
		return sqlite.Open(ctx, sqlite.Options{Path: path, Synchronous: strings.ToUpper(q.Get("synchronous"))})
	case "postgres", "postgresql":
		return postgres.Open(ctx, postgres.Options{URL: raw})
	case "cassandra":
		opts, err := cassandraOptions(rest)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--store %q: %v", raw, err)}
		}
		return cassandra.Open(ctx, opts)
	}
	return nil, &usageError{fmt.Errorf("--store %q: unknown scheme %q (want sqlite, postgres or cassandra)", raw, scheme)}
}

// cassandraOptions parses HOST[:PORT][,HOST[:PORT]...][/KEYSPACE][?consistency=…&serial_consistency=…&replication_factor=N&visibility_bucket_bytes=N].
func cassandraOptions(rest string) (cassandra.Options, error) {
	var opts cassandra.Options
	rest, query, _ := strings.Cut(rest, "?")
	hosts, keyspace, _ := strings.Cut(rest, "/")
	if hosts == "" {
		return opts, fmt.Errorf("no hosts")
	}
	opts.Hosts = strings.Split(hosts, ",")
	opts.Keyspace = keyspace
	q, err := url.ParseQuery(query)
	if err != nil {
		return opts, err
	}
	for k, v := range q {
		switch k {
		case "consistency":
			opts.Consistency = v[0]
		case "serial_consistency":
			opts.SerialConsistency = v[0]
		case "replication_factor":
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 1 {
				return opts, fmt.Errorf("replication_factor %q: want a positive number", v[0])
			}
			opts.ReplicationFactor = n
		case "visibility_bucket_bytes":
			n, err := strconv.ParseInt(v[0], 10, 64)
			if err != nil || n < 1 {
				return opts, fmt.Errorf("visibility_bucket_bytes %q: want a positive number", v[0])
			}
			opts.VisibilityBucketBytes = n
		default:
			return opts, fmt.Errorf("unknown parameter %q (known: consistency, serial_consistency, replication_factor, visibility_bucket_bytes)", k)
		}
	}
	return opts, nil
}
