package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/batch"
	"github.com/strandhq/strand/console"
	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/dag/resources"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/humantask"
	"github.com/strandhq/strand/internal/certs"
	"github.com/strandhq/strand/message"
	"github.com/strandhq/strand/remote"
	"github.com/strandhq/strand/schedule"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/store/sqlite"
	"github.com/strandhq/strand/system"
	"github.com/strandhq/strand/worker"
)

func newServerCommand() *cobra.Command {
	var (
		storeURL string
		listen   string
		drain    time.Duration
		idle     time.Duration
		config   string
		// withConsole serves the web console beside the API.
		withConsole bool
		// DAG and saga workers in the server process (--worker-groups)
		workerGroups      []string
		workerConcurrency int
		insecure          bool
		auditRetention    time.Duration
		tlsCert, tlsKey   string
		tlsClientCA       string
		tlsCA             string
		secretFile        string
		smtp              dag.MailServer
		dsKeyFile         string
		resourceMaxSize   int64
		sopts             server.Options
		eopts             engine.Options
		// Limits of failed logins (issue 36, logins).
		loginLimits access.LoginLimits
	)
	// Slow and idle clients: --min-body-rate (with --min-body-rate-window
	// in sopts), --max-idle-conns-per-address.
	var (
		minBodyRate  int64
		maxIdleConns int
		pprof        string
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the engine and serve its HTTP/JSON API (/api/v1)",
		Long: "Runs the engine over a store and serves its API for remote workers and clients.\n" +
			"A flag left unset comes from the environment (STRAND_STORE, STRAND_LISTEN, STRAND_POLL_WAIT, ...)\n" +
			"or else from the JSON file --config names ({\"store\": \"postgres://...\", \"listen\": \"0.0.0.0:8233\"}).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := applySettings(cmd, config); err != nil {
				return err
			}
			if sopts.PollWait <= 0 || sopts.MaxBody <= 0 || sopts.PollRate < 0 {
				return &usageError{fmt.Errorf("--poll-wait and --max-body must be positive, --poll-rate not negative")}
			}
			if sopts.BodyMemory < sopts.MaxBody || sopts.BodyTimeout <= 0 || idle <= 0 {
				return &usageError{fmt.Errorf("--body-memory must be at least --max-body, --body-timeout and --idle-timeout positive")}
			}
			if l := loginLimits; l.BackoffAfter < 1 || l.LockAfter < l.BackoffAfter || l.LockFor <= 0 || l.AddressBackoffAfter < 1 {
				return &usageError{fmt.Errorf("--login-backoff-after and --login-address-backoff-after must be at least 1, --login-lock-after at least --login-backoff-after, --login-lock-for positive")}
			}
			if minBodyRate < 0 || sopts.BodyRateWindow <= 0 || maxIdleConns < 0 {
				return &usageError{fmt.Errorf("--min-body-rate and --max-idle-conns-per-address must not be negative (0 turns them off), --min-body-rate-window must be positive")}
			}
			if sopts.MinBodyRate = minBodyRate; minBodyRate == 0 {
				sopts.MinBodyRate = -1 // off
			}
			if eopts.NodeTTL < time.Second || eopts.NumShards < 0 {
				return &usageError{fmt.Errorf("--node-ttl must be at least 1s, --shards not negative")}
			}
			if eopts.EagerCommitDelay <= 0 {
				return &usageError{fmt.Errorf("--eager-commit-delay %s: must be positive", eopts.EagerCommitDelay)}
			}
			stopProfiles, err := serveProfiles(cmd, pprof)
			if err != nil {
				return err
			}
			defer stopProfiles()
			for _, n := range sopts.HostNames {
				if _, err := netip.ParseAddr(strings.Trim(n, "[]")); err != nil && (n == "" || strings.ContainsAny(n, ":/ ")) {
					return &usageError{fmt.Errorf("--host-name %q: want a name this server is reached by (strand.example.com) or an address, without a port", n)}
				}
			}
			if eopts.CacheMemory < 1<<20 {
				return &usageError{fmt.Errorf("--cache-memory %d: want at least 1 MiB (1048576)", eopts.CacheMemory)}
			}
			if eopts.Address != "" {
				if u, err := url.Parse(eopts.Address); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return &usageError{fmt.Errorf("--advertise %q: want http://host:port", eopts.Address)}
				}
			}
			var mail *dag.MailServer
			if smtp.Addr != "" || smtp.From != "" || smtp.User != "" || smtp.Password != "" {
				if err := smtp.Check(); err != nil {
					return &usageError{fmt.Errorf("SMTP server for alert emails: %v", err)}
				}
				mail = &smtp
			}
			setMemoryLimit(eopts.CacheMemory)
			var serverTLS, peerTLS *tls.Config
			if tlsCert != "" || tlsKey != "" || tlsClientCA != "" {
				if tlsCert == "" || tlsKey == "" {
					return &usageError{fmt.Errorf("--tls-cert and --tls-key go together (--tls-client-ca needs them)")}
				}
				var err error
				if serverTLS, err = certs.ServerConfig(tlsCert, tlsKey, tlsClientCA); err != nil {
					return &usageError{err}
				}
			}
			if tlsCA != "" || serverTLS != nil {
				var err error
				if peerTLS, err = certs.ClientConfig(tlsCA, "", ""); err != nil {
					return &usageError{fmt.Errorf("--tls-ca: %v", err)}
				}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &usageError{fmt.Errorf("--listen %q: %v", listen, err)}
			}
			idleConns := server.NewIdleConns(server.IdleConnsOptions{MaxPerAddress: maxIdleConns})
			defer idleConns.Close()
			ln = idleConns.Listener(ln) // under TLS: it sees when a request begins to come
			scheme := "http"
			if serverTLS != nil {
				ln, scheme = tls.NewListener(ln, serverTLS), "https"
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			opening := time.Now()
			st, err := openStore(ctx, storeURL)
			if err != nil {
				ln.Close()
				return err
			}
			defer st.Close()
			from, to, err := st.Migrate(ctx)
			if err != nil {
				ln.Close()
				return err
			}
			log.Info("store open", "schema_from", from, "schema_to", to, "took", time.Since(opening).Round(time.Millisecond))
			secret, err := clusterSecret(secretFile)
			if err != nil {
				ln.Close()
				return err
			}
			ac := access.New(st, access.Options{LoginLimits: loginLimits})
			open, err := accessMode(ctx, ac, ln.Addr(), insecure, secret != "", log)
			if err != nil {
				ln.Close()
				return err
			}
			sopts.Access, sopts.Open, sopts.ClusterSecret = ac, open, secret
			if resourceMaxSize < 1 || resourceMaxSize > 32<<20 {
				ln.Close()
				return &usageError{fmt.Errorf("--resource-max-size %d: want 1 to 33554432 bytes (32 MiB)", resourceMaxSize)}
			}
			dsKey, err := dataSourceKey(dsKeyFile, storeURL, log)
			if err != nil {
				ln.Close()
				return err
			}
			centre, err := resources.New(st, resources.Options{MaxSize: resourceMaxSize, Key: dsKey})
			if err != nil {
				ln.Close()
				return &usageError{err}
			}
			audit := server.NewAuditLog(st, server.AuditOptions{Retention: auditRetention, Logger: log})
			audit.Start()
			defer audit.Close() // after the server's shutdown: what it answered is written
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			reg.MustRegister(idleConns.Metrics()...)
			if eopts.Address == "" {
				eopts.Address = scheme + "://" + ln.Addr().String()
			}
			eopts.Logger, eopts.Metrics = log, reg
			eopts.Dial = func(addr string) api.Peer {
				return remote.NewWithOptions(addr, remote.Options{NodeSecret: secret, TLS: peerTLS})
			}
			eng, err := engine.Open(ctx, st, eopts)
			if err != nil {
				ln.Close()
				return err
			}
			defer eng.Close()
			draining, drainNow := context.WithCancel(context.WithoutCancel(ctx))
			defer drainNow()
			// The scheduler worker runs the schedules of every namespace on
			// this node, beside the engine (each node of a cluster runs one).
			// It also delivers the DAGs' alerts, through the SMTP server
			// configured here: workers need no mail settings.
			alerts := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strand_dag_alerts_total",
				Help: "DAG alerts by channel (email, webhook; group for alerts to a group that does not exist) and outcome (delivered, failed, missing)."}, []string{"channel", "outcome"})
			reg.MustRegister(alerts)
			alerter := dag.NewAlerter(eng, dag.AlertOptions{Mail: mail, Users: server.UserDirectory(ac), Records: st, Logger: log,
				Counted: func(channel, outcome string) { alerts.WithLabelValues(channel, outcome).Inc() }})
			if mail != nil {
				log.Info("alert emails go through an SMTP server", "smtp", mail.String())
			}
			runner := system.NewRunner(eng, system.RunnerOptions{Logger: log, Worker: worker.Options{Logger: log},
				Register: func(w *worker.Worker, _ string) { dag.RegisterAlerts(w, alerter) }})
			if err := runner.Start(ctx); err != nil {
				ln.Close()
				return err
			}
			defer func() {
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
				defer cancel()
				if err := runner.Stop(sctx); err != nil {
					log.Warn("stopping the scheduler", "error", err)
				}
			}()
			if len(workerGroups) > 0 {
				// DAG workers in this process, for a node that is its own
				// worker (a laptop, a small install).
				stopWorkers, err := startDAGWorkers(ctx, eng, dagWorkerOptions{groups: workerGroups, concurrency: workerConcurrency,
					identity: eopts.Identity, log: log, centre: localCentre{centre}})
				if err != nil {
					ln.Close()
					return err
				}
				defer func() {
					sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
					defer cancel()
					stopWorkers(sctx)
				}()
			}
			srv := &http.Server{Handler: server.New(served{eng, schedule.NewService(eng), batch.NewService(eng), message.NewService(eng), humantask.NewService(eng)}, server.Options{Logger: log, Registry: reg, Ready: eng.Ready,
				PollWait: sopts.PollWait, MaxBody: sopts.MaxBody, BodyMemory: sopts.BodyMemory, BodyTimeout: sopts.BodyTimeout,
				PollRate: sopts.PollRate, Draining: draining, Console: consoleHandler(withConsole),
				Access: sopts.Access, Open: sopts.Open, ClusterSecret: sopts.ClusterSecret, Audit: audit, Alerts: alerter, Resources: centre,
				HostNames: sopts.HostNames, AnyAddressHost: insecure,
				MinBodyRate: sopts.MinBodyRate, BodyRateWindow: sopts.BodyRateWindow}),
				// No ReadTimeout: it would end long polls; the handler
				// bounds reading a body (--body-timeout).
				ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idle, ConnState: idleConns.ConnState}
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			log.Info("strand server listening", "address", ln.Addr().String(), "store", storeURL)
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s://%s\n", scheme, ln.Addr())
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
			}
			log.Info("shutting down: draining requests", "for", drain)
			drainNow() // long polls answer at once; the rest finish
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&storeURL, "store", "sqlite://"+sqlite.DefaultPath, "store URL (sqlite://PATH, postgres://..., cassandra://...)")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8233", "address to listen on")
	cmd.Flags().StringVar(&pprof, "pprof", "", "serve Go's profiles (net/http/pprof) at this address, for measuring the server (keep it on loopback: they are not access-controlled)")
	cmd.Flags().DurationVar(&drain, "drain", 30*time.Second, "how long shutdown waits for requests in flight")
	cmd.Flags().StringVar(&config, "config", "", "a JSON file of settings (keys are these flags' names)")
	cmd.Flags().DurationVar(&sopts.PollWait, "poll-wait", 30*time.Second, "how long a task poll or result wait is held open")
	cmd.Flags().DurationVar(&eopts.QueryTimeout, "query-timeout", 30*time.Second, "the longest a query waits for a worker's answer (a caller's earlier deadline applies first)")
	cmd.Flags().DurationVar(&eopts.QueryPollerWindow, "query-poller-window", 10*time.Second, "a query fails with no_worker when no worker has polled its run's queue for this long")
	cmd.Flags().Int64Var(&sopts.MaxBody, "max-body", 64<<20, "largest request body in bytes")
	cmd.Flags().Int64Var(&sopts.BodyMemory, "body-memory", 128<<20, "request-body bytes held at once across the server; a body that finds no room within 5s gets 503 with Retry-After")
	cmd.Flags().DurationVar(&sopts.BodyTimeout, "body-timeout", 2*time.Minute, "how long reading a request body may take after its header")
	cmd.Flags().DurationVar(&idle, "idle-timeout", 2*time.Minute, "how long an idle keep-alive connection is kept open")
	// Slow and idle clients.
	cmd.Flags().Int64Var(&minBodyRate, "min-body-rate", server.DefaultMinBodyRate, "the slowest a request body may arrive, in bytes a second: a body further behind than --min-body-rate-window is cut off with 408 (0: no minimum)")
	cmd.Flags().DurationVar(&sopts.BodyRateWindow, "min-body-rate-window", server.DefaultBodyRateWindow, "how far a request body may fall behind --min-body-rate (and the grace of its first bytes)")
	cmd.Flags().IntVar(&maxIdleConns, "max-idle-conns-per-address", server.DefaultMaxIdleConnsPerAddress, "idle keep-alive connections one client address may hold; beyond it the longest idle are closed after 1s (0: no cap)")
	cmd.Flags().BoolVar(&withConsole, "console", true, "serve the web console at / (--console=false: the API alone)")
	cmd.Flags().StringSliceVar(&workerGroups, "worker-groups", nil, "run DAG and YAML saga workers of these groups in this process, in the default namespace (what strand worker runs; shell tasks run as this process's user)")
	cmd.Flags().IntVar(&workerConcurrency, "worker-concurrency", 8, "with --worker-groups: tasks run at once per group")
	cmd.Flags().StringVar(&eopts.Address, "advertise", "", "the URL other nodes reach this one at (default http://LISTEN)")
	cmd.Flags().StringVar(&eopts.Identity, "node-id", "", "this node's name in the nodes table (default host:pid)")
	cmd.Flags().DurationVar(&eopts.NodeTTL, "node-ttl", 30*time.Second, "how long a node's heartbeat keeps it alive; its shards move after that")
	cmd.Flags().IntVar(&eopts.NumShards, "shards", 0, "shard count of a new store (0: 4, or 1 on SQLite); fixed once chosen")
	cmd.Flags().DurationVar(&eopts.RedeliveryDelay, "redelivery-delay", 5*time.Second, "the least a step attempt in flight when its shard changed hands waits for its worker to report before it is offered again; it waits on until its heartbeat timeout or start-to-close passes (negative: no wait)")
	cmd.Flags().DurationVar(&eopts.EagerCommitDelay, "eager-commit-delay", engine.DefaultEagerCommitDelay, "how long inputs (a start, a signal, a step's result) handed to a worker already waiting may stay uncommitted, to share one commit with its answer; their callers wait up to it")
	cmd.Flags().Int64Var(&eopts.CacheMemory, "cache-memory", engine.DefaultCacheMemory, "bytes of run state kept in memory (estimated); idle runs beyond it are let go of, least recently used first, and read again when used")
	cmd.Flags().Float64Var(&sopts.PollRate, "poll-rate", 0, "task polls per second the server accepts (0: no limit); more get 429")
	cmd.Flags().StringVar(&tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (chain) file; replaced files are read again without a restart")
	cmd.Flags().StringVar(&tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
	cmd.Flags().StringVar(&tlsClientCA, "tls-client-ca", "", "ask clients for a certificate and accept one this PEM CA bundle signed: its common name is the user or service account it calls as")
	cmd.Flags().StringVar(&tlsCA, "tls-ca", "", "the PEM CA bundle the other nodes' certificates are checked against (default: the system's roots)")
	cmd.Flags().DurationVar(&auditRetention, "audit-retention", 90*24*time.Hour, "how long the audit log keeps what was changed through the API")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "serve without access control on an address other machines reach, while the store has no user (on loopback that is the default)")
	cmd.Flags().StringVar(&dsKeyFile, "datasource-key-file", "", "a file of 64 hex digits, the key data source passwords are encrypted with, the same on every node (env STRAND_DATASOURCE_KEY_FILE; default for a SQLite store: strand-datasource.key beside it, made at first start)")
	cmd.Flags().Int64Var(&resourceMaxSize, "resource-max-size", resources.DefaultMaxSize, "the largest resource (a file DAG tasks name) the server takes, in bytes")
	cmd.Flags().StringVar(&secretFile, "cluster-secret-file", "", "a file holding the secret the nodes of a cluster call each other with, the same on every node (env STRAND_CLUSTER_SECRET holds it instead)")
	// Open mode's guard (issue 36).
	cmd.Flags().StringSliceVar(&sopts.HostNames, "host-name", nil, "a name (or address) other than localhost this server is reached by, repeatable: "+
		"while it runs without users it refuses requests whose Host header names another (DNS rebinding)")
	cmd.Flags().StringVar(&smtp.Addr, "smtp-server", "", "the SMTP server (HOST:PORT) alert groups' emails go through")
	cmd.Flags().StringVar(&smtp.From, "smtp-from", "", "the sender's address of alert emails")
	cmd.Flags().StringVar(&smtp.User, "smtp-user", "", "the user to log in to the SMTP server as (with --smtp-password)")
	cmd.Flags().StringVar(&smtp.Password, "smtp-password", "", "the SMTP user's password: better in env STRAND_SMTP_PASSWORD or the --config file than on the command line; never shown back")
	cmd.Flags().StringVar(&smtp.TLS, "smtp-tls", dag.MailSTARTTLS, "TLS to the SMTP server: starttls (refused if the server does not offer it), tls (from the first byte, port 465) or none")
	// Limits of failed logins (issue 36, logins).
	cmd.Flags().IntVar(&loginLimits.BackoffAfter, "login-backoff-after", 5, "failed logins of a user name before each further attempt waits (2s, doubling, up to a minute)")
	cmd.Flags().IntVar(&loginLimits.LockAfter, "login-lock-after", 10, "failed logins of a user name that lock it for --login-lock-for, or until strand user unlock")
	cmd.Flags().DurationVar(&loginLimits.LockFor, "login-lock-for", 15*time.Minute, "how long failed logins lock a user name")
	cmd.Flags().IntVar(&loginLimits.AddressBackoffAfter, "login-address-backoff-after", 20, "failed logins from one remote address, of any names, before each further attempt from it waits")
	return cmd
}

// clusterSecret reads the nodes' shared secret: the file's first line, or
// STRAND_CLUSTER_SECRET.
func clusterSecret(file string) (string, error) {
	if file == "" {
		return os.Getenv("STRAND_CLUSTER_SECRET"), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", &usageError{fmt.Errorf("--cluster-secret-file: %v", err)}
	}
	secret, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(secret) < 16 {
		return "", &usageError{fmt.Errorf("--cluster-secret-file %s: the secret is shorter than 16 bytes", file)}
	}
	return secret, nil
}

// accessMode decides whether the server runs open (every caller may do
// everything): only while the store has no user, and then only on loopback
// or with --insecure.
func accessMode(ctx context.Context, ac *access.Service, addr net.Addr, insecure, haveSecret bool, log *slog.Logger) (open bool, err error) {
	has, err := ac.HasUsers(ctx)
	if err != nil {
		return false, err
	}
	if has {
		log.Info("access control on: every request needs a token or a console session")
		if !haveSecret {
			log.Info("no cluster secret: other nodes' peering calls are refused, so this node serves alone (set STRAND_CLUSTER_SECRET or --cluster-secret-file on every node of a cluster)")
		}
		return false, nil
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		log.Warn("access control off: the store has no user, so every caller on this machine may do everything; " +
			"make the first admin with `strand user create NAME --admin --store STORE` and restart")
		return true, nil
	}
	if insecure {
		log.Warn("access control off (--insecure): anyone who reaches " + addr.String() + " may do everything")
		return true, nil
	}
	return false, &usageError{fmt.Errorf("--listen %s is reachable from other machines and the store has no user: "+
		"make the first admin with `strand user create NAME --admin --store STORE`, or pass --insecure to serve without access control", addr)}
}

// served is what strand server serves: the engine, and the schedules and
// batches over it.
type served struct {
	*engine.Engine
	*schedules
	*batches
	*messages
	*humanTasks
}

// schedules, batches and messages name the services served embeds.
type (
	schedules  = schedule.Service
	batches    = batch.Service
	messages   = message.Service
	humanTasks = humantask.Service
)

// consoleHandler is the web console's handler, or nil (none) when the
// server is not to serve it.
func consoleHandler(serve bool) http.Handler {
	if !serve {
		return nil
	}
	return console.Handler()
}
