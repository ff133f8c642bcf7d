package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/dag/resources"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
)

// dataSourceKey reads the key data source secrets are encrypted with: the
// file's 64 hex digits. With no file named, a SQLite store's key is the
// file strand-datasource.key beside it, made at first start; other stores
// have none unless one is named (every node of a cluster needs the same).
func dataSourceKey(file, storeURL string, log *slog.Logger) ([]byte, error) {
	if file == "" {
		file = os.Getenv("STRAND_DATASOURCE_KEY_FILE")
	}
	if file == "" {
		scheme, rest, _ := strings.Cut(storeURL, "://")
		if scheme != "sqlite" && scheme != "file" {
			return nil, nil
		}
		path, _, _ := strings.Cut(rest, "?")
		file = filepath.Join(filepath.Dir(path), "strand-datasource.key")
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			key := make([]byte, 32)
			if _, err := rand.Read(key); err != nil {
				return nil, err
			}
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err == nil {
				_, err = f.WriteString(hex.EncodeToString(key) + "\n")
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil && !errors.Is(err, os.ErrExist) {
				return nil, fmt.Errorf("make the data source key %s: %w", file, err)
			}
			if err == nil {
				log.Info("made the key data source secrets are encrypted with: keep it, and back it up with the store", "file", file)
				return key, nil
			}
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--datasource-key-file: %v", err)}
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return nil, &usageError{fmt.Errorf("--datasource-key-file %s: want 64 hex digits (32 bytes; openssl rand -hex 32 makes one)", file)}
	}
	return key, nil
}

// localCentre is the resource centre of a server's own workers
// (--worker-groups): in process, as a cluster admin.
type localCentre struct{ c *resources.Centre }

func (l localCentre) DescribeResource(ctx context.Context, name string) (resources.Resource, error) {
	return l.c.Resource(ctx, name)
}

func (l localCentre) ResourceContent(ctx context.Context, name string, v int32) (resources.Version, []byte, error) {
	return l.c.Content(ctx, name, v)
}

func (l localCentre) DescribeUDF(ctx context.Context, name string) (resources.UDF, error) {
	return l.c.UDF(ctx, name)
}

func (l localCentre) ConnectDataSource(ctx context.Context, name string) (resources.Connection, error) {
	return l.c.Connect(ctx, name)
}

// remoteCentre is the resource centre of strand worker: the server's.
type remoteCentre struct{ s *remote.Service }

func (r remoteCentre) DescribeResource(ctx context.Context, name string) (resources.Resource, error) {
	return r.s.DescribeResource(ctx, name)
}

func (r remoteCentre) ResourceContent(ctx context.Context, name string, v int32) (resources.Version, []byte, error) {
	c, err := r.s.ResourceContent(ctx, name, v)
	return c.Version, c.Content, err
}

func (r remoteCentre) DescribeUDF(ctx context.Context, name string) (resources.UDF, error) {
	return r.s.DescribeUDF(ctx, name)
}

func (r remoteCentre) ConnectDataSource(ctx context.Context, name string) (resources.Connection, error) {
	return r.s.ConnectDataSource(ctx, name)
}

// newResourceCommand is strand resource: the files of the resource centre.
func newResourceCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "resource", Short: "Upload and manage the files (scripts, jars, SQL) DAG tasks name: versioned, per-user"}
	o.register(cmd)
	upload := &cobra.Command{
		Use: "upload NAME FILE", Short: "Upload FILE as a new version of resource NAME (- reads stdin)", Args: cobra.ExactArgs(2),
		Example: "  strand resource upload etl.sh ./etl.sh\n  strand resource upload lib/x.sql ./x.sql",
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			content, err := readFileArg(args[1])
			if err != nil {
				return &usageError{err}
			}
			r, err := svc.UploadResource(cmd.Context(), args[0], content, cliIdentity())
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), r, func(tw *tabwriter.Writer) {
				v := r.Latest()
				fmt.Fprintf(tw, "%s version %d stored (%d bytes, sha256 %s)\n", r.Name, v.Version, v.Size, v.SHA256[:12])
			})
		},
	}
	list := &cobra.Command{
		Use: "list", Short: "List the resources you may use", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			l, err := svc.ListResources(cmd.Context())
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), l, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NAME\tVERSION\tSIZE\tOWNER\tUPLOADED")
				for _, r := range l.Resources {
					v := r.Latest()
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", r.Name, v.Version, v.Size, r.Owner, v.UploadedAt.Local().Format(time.RFC3339))
				}
			})
		},
	}
	show := &cobra.Command{
		Use: "show NAME", Short: "Show a resource, its versions and who may use it", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			r, err := svc.DescribeResource(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), r, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "name:\t%s\nowner:\t%s\nusers:\t%s\n", r.Name, r.Owner, strings.Join(r.Users, ", "))
				fmt.Fprintln(tw, "\nVERSION\tSIZE\tSHA256\tUPLOADED\tBY")
				for _, v := range r.Versions {
					fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", v.Version, v.Size, v.SHA256[:12], v.UploadedAt.Local().Format(time.RFC3339), v.UploadedBy)
				}
			})
		},
	}
	var outFile string
	get := &cobra.Command{
		Use: "get NAME[@VERSION]", Short: "Write a version of a resource (default the latest) to stdout or -o FILE", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			name, v, err := resources.ParseRef(args[0])
			if err != nil {
				return &usageError{err}
			}
			c, err := svc.ResourceContent(cmd.Context(), name, v)
			if err != nil {
				return err
			}
			if outFile == "" {
				_, err = cmd.OutOrStdout().Write(c.Content)
				return err
			}
			return os.WriteFile(outFile, c.Content, 0o644)
		},
	}
	get.Flags().StringVarP(&outFile, "out", "O", "", "write to this file instead of stdout")
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a resource and all its versions", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if err := svc.DeleteResource(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "resource %s deleted\n", args[0])
			return nil
		},
	}
	grant := func(revoke bool) *cobra.Command {
		use, short := "grant NAME USER", "Let USER use resource NAME"
		if revoke {
			use, short = "revoke NAME USER", "Take back USER's use of resource NAME"
		}
		return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(2), RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			r, err := svc.GrantResource(cmd.Context(), args[0], args[1], revoke)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), r, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "resource %s: owner %s, users: %s\n", r.Name, r.Owner, strings.Join(r.Users, ", "))
			})
		}}
	}
	cmd.AddCommand(upload, list, show, get, del, grant(false), grant(true))
	return cmd
}

// readSecret reads --password: @FILE (its first line), - (stdin's first
// line) or the value itself.
func readSecret(cmd *cobra.Command, v string) (string, error) {
	switch {
	case v == "-":
		line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		return strings.TrimRight(line, "\r\n"), nil
	case strings.HasPrefix(v, "@"):
		b, err := os.ReadFile(v[1:])
		if err != nil {
			return "", &usageError{fmt.Errorf("--password: %v", err)}
		}
		line, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimRight(line, "\r"), nil
	}
	return v, nil
}

// newDataSourceCommand is strand datasource: data sources defined once on
// the server.
func newDataSourceCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "datasource", Short: "Define the databases sql tasks name, once on the server (passwords kept encrypted), per-user"}
	o.register(cmd)
	var req server.DataSourceRequest
	var password string
	put := func(update bool) *cobra.Command {
		use, short := "create NAME --type postgresql|sqlite --url URL [--password @FILE]", "Create a data source: its connection is checked first, and nothing is stored when it fails"
		if update {
			use, short = "update NAME --type postgresql|sqlite --url URL [--password @FILE]", "Change a data source (its password stays unless given): its connection is checked first"
		}
		c := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1),
			Example: "  strand datasource create warehouse --type postgresql --url postgres://etl@db:5432/warehouse --password @/etc/strand/warehouse.pw\n" +
				"  strand datasource create local --type sqlite --url sqlite:/var/lib/etl.db",
			RunE: func(cmd *cobra.Command, args []string) error {
				svc, err := o.service()
				if err != nil {
					return err
				}
				r := req
				r.Name = args[0]
				if r.Password, err = readSecret(cmd, password); err != nil {
					return err
				}
				if u, err := url.Parse(r.URL); err == nil && u.User != nil {
					// A password in the URL travels as the password field,
					// which the audit log leaves out.
					if pw, ok := u.User.Password(); ok {
						if r.Password == "" {
							r.Password = pw
						}
						u.User = url.User(u.User.Username())
						r.URL = u.String()
					}
				}
				d, err := svc.CreateDataSource(cmd.Context(), r, update)
				if err != nil {
					return err
				}
				return o.print(cmd.OutOrStdout(), d, func(tw *tabwriter.Writer) {
					what := "created"
					if update {
						what = "updated"
					}
					fmt.Fprintf(tw, "data source %s %s (%s %s)\n", d.Name, what, d.Type, d.URL)
				})
			}}
		f := c.Flags()
		f.StringVar(&req.Type, "type", "", "postgresql or sqlite")
		f.StringVar(&req.URL, "url", "", "postgres://USER@HOST:PORT/DATABASE or sqlite:PATH (a password in it is kept encrypted too)")
		f.StringVar(&password, "password", "", "the password: @FILE reads it from a file, - from stdin")
		f.StringVar(&req.Description, "description", "", "what it is")
		f.BoolVar(&req.SkipCheck, "skip-check", false, "store it without checking it from the server (a database only the workers reach)")
		return c
	}
	list := &cobra.Command{
		Use: "list", Short: "List the data sources you may use (never their passwords)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			all, err := svc.ListDataSources(cmd.Context())
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), server.DataSourceList{DataSources: all}, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NAME\tTYPE\tURL\tOWNER")
				for _, d := range all {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Name, d.Type, d.URL, d.Owner)
				}
			})
		},
	}
	show := &cobra.Command{
		Use: "show NAME", Short: "Show a data source (never its password)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			d, err := svc.DescribeDataSource(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), d, func(tw *tabwriter.Writer) {
				pw := "none"
				if d.HasPassword {
					pw = "kept encrypted"
				}
				fmt.Fprintf(tw, "name:\t%s\ntype:\t%s\nurl:\t%s\npassword:\t%s\nowner:\t%s\nusers:\t%s\nmodified:\t%s by %s\n",
					d.Name, d.Type, d.URL, pw, d.Owner, strings.Join(d.Users, ", "), d.ModifiedAt.Local().Format(time.RFC3339), d.ModifiedBy)
			})
		},
	}
	simple := func(use, short, done string, f func(ctx context.Context, svc *remote.Service, name string) error) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if err := f(cmd.Context(), svc, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "data source %s %s\n", args[0], done)
			return nil
		}}
	}
	del := simple("delete NAME", "Delete a data source", "deleted", func(ctx context.Context, svc *remote.Service, name string) error {
		return svc.DeleteDataSource(ctx, name)
	})
	test := simple("test NAME", "Check from the server that a data source answers", "answers", func(ctx context.Context, svc *remote.Service, name string) error {
		return svc.TestDataSource(ctx, name)
	})
	grant := func(revoke bool) *cobra.Command {
		use, short := "grant NAME USER", "Let USER use data source NAME in their DAGs"
		if revoke {
			use, short = "revoke NAME USER", "Take back USER's use of data source NAME"
		}
		return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(2), RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			d, err := svc.GrantDataSource(cmd.Context(), args[0], args[1], revoke)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), d, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "data source %s: owner %s, users: %s\n", d.Name, d.Owner, strings.Join(d.Users, ", "))
			})
		}}
	}
	cmd.AddCommand(put(false), put(true), list, show, del, test, grant(false), grant(true))
	return cmd
}

// newUDFCommand is strand udf: functions sql tasks create in their session.
func newUDFCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "udf", Short: "Register user-defined functions sql tasks create before their statements (PostgreSQL)"}
	o.register(cmd)
	var req server.UDFRequest
	create := &cobra.Command{
		Use: "create NAME --type postgresql --resource NAME[@VERSION]", Short: "Register a UDF whose CREATE FUNCTION text is a resource", Args: cobra.ExactArgs(1),
		Example: "  strand resource upload fn/add_tax.sql ./add_tax.sql\n  strand udf create add_tax --type postgresql --resource fn/add_tax.sql",
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			u, err := svc.PutUDF(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), u, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "UDF %s stored (%s, from resource %s)\n", u.Name, u.Type, u.Resource)
			})
		},
	}
	create.Flags().StringVar(&req.Type, "type", "postgresql", "the data source type it is for (postgresql; SQLite cannot create functions in SQL)")
	create.Flags().StringVar(&req.Resource, "resource", "", "the resource holding its text: NAME (the latest when a task runs) or NAME@VERSION")
	create.Flags().StringVar(&req.Description, "description", "", "what it does")
	list := &cobra.Command{
		Use: "list", Short: "List the UDFs", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			all, err := svc.ListUDFs(cmd.Context())
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), server.UDFList{UDFs: all}, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NAME\tTYPE\tRESOURCE\tOWNER")
				for _, u := range all {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Name, u.Type, u.Resource, u.Owner)
				}
			})
		},
	}
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a UDF", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if err := svc.DeleteUDF(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "UDF %s deleted\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, del)
	return cmd
}
