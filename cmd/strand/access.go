package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/server"
)

// accessAdmin manages users and tokens: access.Service on a store (for the
// first admin, before anyone can log in), or a server's API.
type accessAdmin interface {
	CreateUser(ctx context.Context, nu access.NewUser) (access.User, error)
	ListUsers(ctx context.Context) ([]access.User, error)
	DeleteUser(ctx context.Context, name string) error
	Unlock(ctx context.Context, name string) (bool, error)
	Grant(ctx context.Context, name, namespace string, roles ...access.Role) (access.User, error)
	SetGroups(ctx context.Context, name string, groups []string) (access.User, error)
	SetEmail(ctx context.Context, name, email string) (access.User, error)
	CreateToken(ctx context.Context, nt access.NewToken) (string, access.Token, error)
	ListTokens(ctx context.Context, user string) ([]access.Token, error)
	RevokeToken(ctx context.Context, id string) error
}

// adminOptions choose where users are managed: --store, or the server.
type adminOptions struct {
	cliOptions
	store string
}

func (o *adminOptions) register(cmd *cobra.Command) {
	o.cliOptions.register(cmd)
	cmd.PersistentFlags().StringVar(&o.store, "store", "", "manage users in this store directly (sqlite://PATH, postgres://..., cassandra://...) instead of through --server: how the first admin is made")
}

// admin returns the access service to use and a function that releases it.
func (o *adminOptions) admin(ctx context.Context) (accessAdmin, func(), error) {
	if o.store == "" {
		svc, err := o.service()
		return svc, func() {}, err
	}
	st, err := openStore(ctx, o.store)
	if err != nil {
		return nil, nil, err
	}
	if _, _, err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, nil, err
	}
	return access.New(st, access.Options{}), func() { st.Close() }, nil
}

// readPassword reads a password: the first line of stdin with
// --password-stdin, else twice from the terminal without echo.
func readPassword(cmd *cobra.Command, fromStdin bool) (string, error) {
	if fromStdin {
		line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read the password from stdin: %w", err)
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return "", &usageError{errors.New("no terminal to ask for the password: pass --password-stdin and write it to stdin")}
	}
	fmt.Fprint(cmd.ErrOrStderr(), "Password: ")
	p1, err := term.ReadPassword(fd)
	fmt.Fprintln(cmd.ErrOrStderr())
	if err != nil {
		return "", err
	}
	fmt.Fprint(cmd.ErrOrStderr(), "Again: ")
	p2, err := term.ReadPassword(fd)
	fmt.Fprintln(cmd.ErrOrStderr())
	if err != nil {
		return "", err
	}
	if string(p1) != string(p2) {
		return "", &usageError{errors.New("the two passwords differ")}
	}
	return string(p1), nil
}

func parseRoles(list []string) ([]access.Role, error) {
	roles := []access.Role{}
	for _, s := range list {
		r, err := access.ParseRole(strings.TrimSpace(s))
		if err != nil {
			return nil, &usageError{err}
		}
		roles = append(roles, r)
	}
	return roles, nil
}

func newUserCommand() *cobra.Command {
	o := &adminOptions{}
	cmd := &cobra.Command{Use: "user", Short: "Manage users and service accounts, and the roles they hold per namespace"}
	o.register(cmd)
	var (
		admin, service, passwordStdin bool
		email                         string
	)
	create := &cobra.Command{
		Use: "create NAME", Short: "Create a user (asks for a password) or, with --service, a service account", Args: cobra.ExactArgs(1),
		Example: "  strand user create alice --admin --store sqlite://strand.db   # the first admin, against the store\n" +
			"  strand user create ci-worker --service                        # through the server, as a cluster admin",
		RunE: func(cmd *cobra.Command, args []string) error {
			nu := access.NewUser{Name: args[0], Email: email, ClusterAdmin: admin, Kind: access.KindUser}
			if service {
				nu.Kind = access.KindService
			} else {
				p, err := readPassword(cmd, passwordStdin)
				if err != nil {
					return err
				}
				nu.Password = p
			}
			a, done, err := o.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			u, err := a.CreateUser(cmd.Context(), nu)
			if err != nil {
				return err
			}
			return o.printUsers(cmd, []access.User{u})
		},
	}
	create.Flags().BoolVar(&admin, "admin", false, "a cluster admin: every role in every namespace, and manages namespaces, users and nodes")
	create.Flags().BoolVar(&service, "service", false, "a service account (no password; it calls with tokens)")
	create.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of stdin")
	create.Flags().StringVar(&email, "email", "", "the user's email address")
	list := &cobra.Command{
		Use: "list", Short: "List users and service accounts", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, done, err := o.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			users, err := a.ListUsers(cmd.Context())
			if err != nil {
				return err
			}
			return o.printUsers(cmd, users)
		},
	}
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a user and revoke their tokens", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, done, err := o.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			return a.DeleteUser(cmd.Context(), args[0])
		},
	}
	var roles []string
	grant := &cobra.Command{
		Use: "grant NAME", Short: "Set the roles a user holds in --namespace (--roles none: take them away)", Args: cobra.ExactArgs(1),
		Example: "  strand user grant bob --namespace payments --roles operator\n  strand user grant ci-worker --roles worker,writer",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(roles) == 1 && roles[0] == "none" {
				roles = nil
			}
			rs, err := parseRoles(roles)
			if err != nil {
				return err
			}
			a, done, err := o.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			u, err := a.Grant(cmd.Context(), args[0], o.namespace, rs...)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s in %s: %s\n", u.Name, o.namespace, rolesText(u.Grants[o.namespace]))
			return nil
		},
	}
	grant.Flags().StringSliceVar(&roles, "roles", nil, "roles, comma-separated: reader, writer, operator, admin, worker (none: no role)")
	grant.MarkFlagRequired("roles")
	groups := &cobra.Command{
		Use: "groups NAME [GROUP...]", Short: "Set the groups a user is in (none given: none): who human tasks are for", Args: cobra.MinimumNArgs(1),
		Example: "  strand user groups bob finance managers",
		RunE: func(cmd *cobra.Command, args []string) error {
			a, done, err := o.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			u, err := a.SetGroups(cmd.Context(), args[0], args[1:])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is in: %s\n", u.Name, strings.Join(u.Groups, ","))
			return nil
		},
	}
	setEmail := &cobra.Command{
		Use: "email NAME [ADDRESS]", Short: "Set a user's email address (none given: none): where alert groups naming the user email them", Args: cobra.RangeArgs(1, 2),
		Example: "  strand user email bob bob@example.com",
		RunE: func(cmd *cobra.Command, args []string) error {
			a, done, err := o.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			addr := ""
			if len(args) == 2 {
				addr = args[1]
			}
			u, err := a.SetEmail(cmd.Context(), args[0], addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s's email address: %s\n", u.Name, cmp.Or(u.Email, "none"))
			return nil
		},
	}
	unlock := &cobra.Command{
		Use: "unlock NAME", Short: "Lift the lock that failed logins put on a user name, so that the user may log in again at once", Args: cobra.ExactArgs(1),
		Long: "After 10 failed logins a name is locked for 15 minutes (the right password is refused too).\n" +
			"Through --server the lock is lifted at once on that node, and on the others at the name's next login;\n" +
			"with --store, on every node at the name's next login.",
		Example: "  strand user unlock alice",
		RunE: func(cmd *cobra.Command, args []string) error {
			a, done, err := o.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			was, err := a.Unlock(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if was {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is unlocked: they may log in again\n", args[0])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "%s was not locked here; any lock on another node is lifted at their next login\n", args[0])
			}
			return nil
		},
	}
	cmd.AddCommand(create, list, del, grant, groups, setEmail, unlock)
	return cmd
}

func rolesText(roles []access.Role) string {
	if len(roles) == 0 {
		return "no role"
	}
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return strings.Join(s, ",")
}

func (o *adminOptions) printUsers(cmd *cobra.Command, users []access.User) error {
	return o.print(cmd.OutOrStdout(), users, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "NAME\tKIND\tCLUSTER ADMIN\tGRANTS\tGROUPS\tDISABLED")
		for _, u := range users {
			var grants []string
			for ns, roles := range u.Grants {
				grants = append(grants, ns+"="+rolesText(roles))
			}
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%v\n", u.Name, u.Kind, u.ClusterAdmin, strings.Join(grants, " "), strings.Join(u.Groups, ","), u.Disabled)
		}
	})
}

func newTokenCommand() *cobra.Command {
	o := &adminOptions{}
	cmd := &cobra.Command{Use: "token", Short: "Make, list and revoke API tokens"}
	o.register(cmd)
	var (
		user, name string
		ttl        time.Duration
	)
	create := &cobra.Command{
		Use: "create", Short: "Make an API token (printed once; the server keeps only its hash)", Args: cobra.NoArgs,
		Example: "  strand token create --name laptop --ttl 720h\n  strand token create --user ci-worker --name ci   # a cluster admin, for a service account",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ttl < 0 {
				return &usageError{fmt.Errorf("--ttl %v: negative", ttl)}
			}
			a, done, err := o.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			secret, t, err := a.CreateToken(cmd.Context(), access.NewToken{User: user, Name: name, TTL: ttl})
			if err != nil {
				return err
			}
			if o.output == "json" {
				return o.print(cmd.OutOrStdout(), server.CreateTokenResponse{Token: secret, Info: t}, nil)
			}
			fmt.Fprintln(cmd.OutOrStdout(), secret)
			fmt.Fprintf(cmd.ErrOrStderr(), "token %s for %s%s: shown this once\n", t.ID, t.User, expiry(t.ExpiresAt))
			return nil
		},
	}
	create.Flags().StringVar(&user, "user", "", "whose token (default: yours; another's needs a cluster admin, or --store)")
	create.Flags().StringVar(&name, "name", "", "what the token is for")
	create.Flags().DurationVar(&ttl, "ttl", 0, "how long the token is accepted (0: until revoked)")
	list := &cobra.Command{
		Use: "list", Short: "List tokens: yours, a user's (--user NAME) or everyone's (--user '*')", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, done, err := o.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			if o.store != "" && user == "*" {
				user = ""
			}
			tokens, err := a.ListTokens(cmd.Context(), user)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), tokens, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "ID\tUSER\tNAME\tCREATED\tEXPIRES\tLAST USED\tREVOKED")
				for _, t := range tokens {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.User, t.Name, when(t.CreatedAt), when(t.ExpiresAt), when(t.LastUsedAt), when(t.RevokedAt))
				}
			})
		},
	}
	list.Flags().StringVar(&user, "user", "", "whose tokens: a name, or * for everyone's")
	revoke := &cobra.Command{
		Use: "revoke ID", Short: "Revoke a token by its id", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, done, err := o.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			return a.RevokeToken(cmd.Context(), args[0])
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

func expiry(t time.Time) string {
	if t.IsZero() {
		return ", never expires"
	}
	return ", expires " + t.Local().Format(time.DateTime)
}

func newLoginCommand() *cobra.Command {
	o := &cliOptions{}
	var (
		name          string
		passwordStdin bool
		ttl           time.Duration
	)
	cmd := &cobra.Command{
		Use: "login", Short: "Log in to a server: the CLI keeps the token it gets for that server", Args: cobra.NoArgs,
		Long: "Asks the server for a token with your name and password and keeps it in " + credentialsHelp + ".\n" +
			"Later commands against the same --server send it; STRAND_TOKEN or --token override it.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				fmt.Fprint(cmd.ErrOrStderr(), "Name: ")
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return err
				}
				name = strings.TrimSpace(line)
			}
			password, err := readLoginPassword(cmd, passwordStdin)
			if err != nil {
				return err
			}
			o.token = "-" // log in without a token kept from before
			svc, err := o.service()
			if err != nil {
				return err
			}
			resp, err := svc.Login(cmd.Context(), server.LoginRequest{Name: name, Password: password, TTL: ttl})
			if err != nil {
				return err
			}
			for _, u := range o.urls { // a cluster's nodes share their users
				if err := saveCredential(u, credential{Token: resp.Token, User: name, ExpiresAt: resp.ExpiresAt}); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged in to %s as %s%s\n", o.server, name, expiry(resp.ExpiresAt))
			return nil
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "your user name (default: asked)")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of stdin")
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "how long the token is accepted (default 30 days)")
	return cmd
}

// readLoginPassword reads a password once (no confirmation).
func readLoginPassword(cmd *cobra.Command, fromStdin bool) (string, error) {
	if fromStdin {
		return readPassword(cmd, true)
	}
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return "", &usageError{errors.New("no terminal to ask for the password: pass --password-stdin and write it to stdin")}
	}
	fmt.Fprint(cmd.ErrOrStderr(), "Password: ")
	p, err := term.ReadPassword(fd)
	fmt.Fprintln(cmd.ErrOrStderr())
	return string(p), err
}

func newPasswordCommand() *cobra.Command {
	o := &cliOptions{}
	var passwordStdin bool
	cmd := &cobra.Command{
		Use: "password", Short: "Change your own password: asks for the current one and the new one; your other login sessions end", Args: cobra.NoArgs,
		Long: "Changes the password of the user you are logged in to --server as, given the current one.\n" +
			"Your other login sessions (the console's, and strand login's elsewhere) end; this one and your API tokens\n" +
			"(strand token create) stay: revoke those with strand token revoke if the password was exposed.",
		Example: "  strand password\n  printf '%s\\n%s\\n' \"$OLD\" \"$NEW\" | strand password --password-stdin",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var current, next string
			if passwordStdin {
				lines := bufio.NewReader(cmd.InOrStdin())
				read := func() (string, error) {
					line, err := lines.ReadString('\n')
					if err != nil && !errors.Is(err, io.EOF) {
						return "", fmt.Errorf("read the passwords from stdin: %w", err)
					}
					return strings.TrimRight(line, "\r\n"), nil
				}
				var err error
				if current, err = read(); err != nil {
					return err
				}
				if next, err = read(); err != nil {
					return err
				}
				if next == "" {
					return &usageError{errors.New("--password-stdin: want the current password on the first line and the new one on the second")}
				}
			} else {
				fd := int(os.Stdin.Fd())
				if !term.IsTerminal(fd) {
					return &usageError{errors.New("no terminal to ask for the passwords: pass --password-stdin and write the current and the new one, a line each, to stdin")}
				}
				fmt.Fprint(cmd.ErrOrStderr(), "Current password: ")
				p, err := term.ReadPassword(fd)
				fmt.Fprintln(cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				current = string(p)
				fmt.Fprint(cmd.ErrOrStderr(), "New password: ")
				p1, err := term.ReadPassword(fd)
				fmt.Fprintln(cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				fmt.Fprint(cmd.ErrOrStderr(), "Again: ")
				p2, err := term.ReadPassword(fd)
				fmt.Fprintln(cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				if string(p1) != string(p2) {
					return &usageError{errors.New("the two new passwords differ")}
				}
				next = string(p1)
			}
			svc, err := o.service()
			if err != nil {
				return err
			}
			resp, err := svc.ChangePassword(cmd.Context(), server.ChangePasswordRequest{CurrentPassword: current, NewPassword: next})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "password changed; %d other login session(s) ended\n", resp.SessionsEnded)
			return nil
		},
	}
	o.register(cmd)
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the current password from the first line of stdin and the new one from the second")
	return cmd
}

func newLogoutCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{
		Use: "logout", Short: "Revoke the token strand login kept for --server, and forget it", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if err := svc.Logout(cmd.Context()); err != nil {
				return err
			}
			for _, u := range o.urls {
				if err := saveCredential(u, credential{}); err != nil {
					return err
				}
			}
			return nil
		},
	}
	o.register(cmd)
	return cmd
}

func newWhoAmICommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{
		Use: "whoami", Short: "Who the server takes you for, and your roles", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			me, err := svc.WhoAmI(cmd.Context())
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), me, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "name\t%s\nkind\t%s\ncluster admin\t%v\naccess control\t%v\n", me.Name, me.Kind, me.ClusterAdmin, me.AccessControl)
				for ns, roles := range me.Grants {
					fmt.Fprintf(tw, "roles in %s\t%s\n", ns, rolesText(roles))
				}
			})
		},
	}
	o.register(cmd)
	return cmd
}

// credential is what strand login keeps for a server.
type credential struct {
	Token     string    `json:"token"`
	User      string    `json:"user"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

const credentialsHelp = "$XDG_CONFIG_HOME/strand/credentials.json (~/.config/strand/credentials.json), readable by you alone"

func credentialsPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config directory for the credentials: %w", err)
	}
	return filepath.Join(dir, "strand", "credentials.json"), nil
}

// loadCredential returns the token strand login kept for server ("" for
// none).
func loadCredential(server string) string {
	path, err := credentialsPath()
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var all map[string]credential
	if json.Unmarshal(b, &all) != nil {
		return ""
	}
	return all[strings.TrimRight(server, "/")].Token
}

// saveCredential keeps c for server (an empty c forgets it), in a file only
// its owner can read.
func saveCredential(server string, c credential) error {
	path, err := credentialsPath()
	if err != nil {
		return err
	}
	all := map[string]credential{}
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &all)
	}
	if c.Token == "" {
		delete(all, strings.TrimRight(server, "/"))
	} else {
		all[strings.TrimRight(server, "/")] = c
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("keep the token: %w", err)
	}
	b, _ := json.MarshalIndent(all, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("keep the token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("keep the token: %w", err)
	}
	return nil
}

func newAuditCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "audit", Short: "Read the audit log: what was changed through the API, by whom, from where"}
	o.register(cmd)
	var (
		actor, since, until, token string
		limit                      int
		all                        bool
	)
	list := &cobra.Command{
		Use: "list", Short: "List the audit log, newest first (--namespace: that namespace's; --all-namespaces: everyone's, for cluster admins)", Args: cobra.NoArgs,
		Example: "  strand audit list --namespace payments --since 2026-11-24T00:00:00Z\n  strand audit list --all-namespaces --actor alice",
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := remote.AuditQuery{Actor: actor, PageSize: limit}
			if !all {
				q.Namespace = o.namespace
			}
			for _, t := range []struct {
				flag string
				v    string
				to   *time.Time
			}{{"since", since, &q.Since}, {"until", until, &q.Until}} {
				if t.v == "" {
					continue
				}
				parsed, err := time.Parse(time.RFC3339, t.v)
				if err != nil {
					return &usageError{fmt.Errorf("--%s %q: want an RFC 3339 time (2026-11-24T09:00:00Z)", t.flag, t.v)}
				}
				*t.to = parsed
			}
			if token != "" {
				var err error
				if q.PageToken, err = pageToken(token); err != nil {
					return err
				}
			}
			svc, err := o.service()
			if err != nil {
				return err
			}
			page, err := svc.ListAudit(cmd.Context(), q)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), page, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "TIME\tNAMESPACE\tACTOR\tACTION\tTARGET\tSTATUS\tFROM")
				for _, e := range page.Entries {
					status := fmt.Sprint(e.Status)
					if n := e.Repeats(); n > 0 {
						status += fmt.Sprintf(" ×%d", n) // refusals folded into one entry
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format(time.DateTime), e.Namespace, e.Actor, e.Action, e.Target, status, e.Remote)
				}
				printMore(tw, page.NextPageToken)
			})
		},
	}
	list.Flags().StringVar(&actor, "actor", "", "only this caller's entries")
	list.Flags().StringVar(&since, "since", "", "entries at or after this time (RFC 3339)")
	list.Flags().StringVar(&until, "until", "", "entries before this time (RFC 3339)")
	list.Flags().IntVar(&limit, "limit", 100, "entries per page (at most 1000)")
	list.Flags().StringVar(&token, "page-token", "", "the page after a list's (it prints the flag)")
	list.Flags().BoolVar(&all, "all-namespaces", false, "every namespace's entries and the cluster's own (cluster admins)")
	cmd.AddCommand(list)
	return cmd
}
