package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/dag/task"
	"github.com/strandhq/strand/saga"
	"github.com/strandhq/strand/worker"
)

// newWorkerCommand is strand worker: a worker process in the binary, for
// users without Go. It runs the DAG interpreter and the built-in task
// types (shell, http, sql) of its worker groups, and the interpreter of
// YAML sagas and their HTTP calls.
func newWorkerCommand() *cobra.Command {
	o := &cliOptions{}
	var (
		groups      []string
		sources     []string
		concurrency int
		workDir     string
		identity    string
		stopWait    time.Duration
		// issue 35: tenants, python and big-data tasks
		tenants   []string
		anyTenant bool
		tools     task.Tools
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run DAG instances and their tasks, and YAML sagas and their HTTP calls, for worker groups",
		Long: `strand worker polls a Strand server for the DAG interpreter's workflow tasks and for the
tasks of its worker groups, and runs them: shell scripts (bash, in a fresh directory), HTTP
calls and SQL statements against the named data sources, python scripts, stored procedures,
and the command lines of spark, flink, mr (hadoop jar), datax and sqoop tasks. A task naming
a tenant runs as the tenant's OS user on a worker allowed to (--tenant, --run-as-tenants).
It also runs the sagas defined in YAML (strand saga apply): their interpreter, and the HTTP
calls and compensations of its worker groups. Start as many as you like, on as many hosts: a task goes to one worker of its
group, and a worker that dies has its tasks retried elsewhere by their retry policy.`,
		Example: `  strand worker --server http://127.0.0.1:8233 --group default --concurrency 8 \
      --datasource warehouse=postgres://etl@db/warehouse --datasource local=sqlite:/var/lib/etl.db
  # the nodes of a cluster: its polls are spread over the live ones
  strand worker --server http://10.0.0.1:8233,http://10.0.0.2:8233,http://10.0.0.3:8233 --group default`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := o.service()
			if err != nil {
				return err
			}
			if len(groups) == 0 {
				return &usageError{fmt.Errorf("--group: name at least one worker group")}
			}
			var list []task.DataSource
			for _, s := range sources {
				ds, err := parseDataSource(s)
				if err != nil {
					return &usageError{err}
				}
				list = append(list, ds)
			}
			if identity == "" {
				host, _ := os.Hostname()
				identity = fmt.Sprintf("%s:%d", host, os.Getpid())
			}
			log := slog.Default()
			ctx := cmd.Context()
			if (len(tenants) > 0 || anyTenant) && os.Geteuid() != 0 {
				return &usageError{fmt.Errorf("--tenant, --run-as-tenants: running tasks as a tenant's OS user needs a worker running as root (this one runs as uid %d)", os.Geteuid())}
			}
			stop, err := startDAGWorkers(ctx, svc, dagWorkerOptions{namespace: o.namespace, groups: groups, concurrency: concurrency,
				sources: list, workDir: workDir, identity: identity, log: log, tenants: tenants, anyTenant: anyTenant, tools: tools, centre: remoteCentre{svc}})
			if err != nil {
				return err
			}
			log.Info("strand worker running", "server", o.server, "namespace", o.namespace, "groups", groups, "concurrency", concurrency, "identity", identity)
			fmt.Fprintf(cmd.OutOrStdout(), "worker %s running the groups %s\n", identity, strings.Join(groups, ", "))
			<-ctx.Done()
			log.Info("strand worker stopping: running tasks finish", "for", stopWait)
			sctx, cancel := context.WithTimeout(context.Background(), stopWait)
			defer cancel()
			stop(sctx)
			return svc.Close()
		},
	}
	o.register(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&groups, "group", []string{dag.DefaultGroup}, "the worker groups whose tasks this worker runs (repeat or comma-separate)")
	f.IntVar(&concurrency, "concurrency", 8, "tasks run at once, per group")
	f.StringArrayVar(&sources, "datasource", nil, "a data source sql tasks may name: NAME=postgres://... or NAME=sqlite:PATH (repeat); it wins over one of the same name defined on the server (strand datasource create)")
	f.StringVar(&workDir, "workdir", "", "where shell tasks get their working directories (default: the system's temporary directory)")
	f.StringVar(&identity, "identity", "", "this worker's name in task instances (default HOST:PID)")
	f.DurationVar(&stopWait, "stop-wait", 30*time.Second, "on SIGTERM, how long running tasks may finish before they are stopped")
	f.StringArrayVar(&tenants, "tenant", nil, "a tenant whose OS user this worker may run tasks as (repeat; the worker must run as root)")
	f.BoolVar(&anyTenant, "run-as-tenants", false, "run tasks as any tenant's OS user (the worker must run as root)")
	f.StringVar(&tools.Python, "python", "", "the interpreter of python tasks and of DataX (default python3 on PATH)")
	f.StringVar(&tools.SparkSubmit, "spark-submit", "", "spark-submit, for spark tasks (default $SPARK_HOME/bin/spark-submit, else on PATH)")
	f.StringVar(&tools.Flink, "flink", "", "flink, for flink tasks (default $FLINK_HOME/bin/flink, else on PATH)")
	f.StringVar(&tools.Hadoop, "hadoop", "", "hadoop, for mr tasks (default $HADOOP_HOME/bin/hadoop, else on PATH)")
	f.StringVar(&tools.Sqoop, "sqoop", "", "sqoop, for sqoop tasks (default $SQOOP_HOME/bin/sqoop, else on PATH)")
	f.StringVar(&tools.DataX, "datax", "", "DataX's datax.py, for datax tasks (default $DATAX_HOME/bin/datax.py, else on PATH)")
	return cmd
}

// dagWorkerOptions configure the workers of DAG pipelines.
type dagWorkerOptions struct {
	namespace   string
	groups      []string
	concurrency int
	sources     []task.DataSource
	workDir     string
	identity    string
	log         *slog.Logger
	// issue 35: the tenants tasks may run as, and the tools of python and
	// big-data tasks.
	tenants   []string
	anyTenant bool
	tools     task.Tools
	// centre is the server's resource centre: the resources tasks fetch,
	// UDFs, and the data sources not given as sources (which win).
	centre dag.Centre
}

// startDAGWorkers starts the interpreters' workers (DAGs on dag.Queue,
// YAML sagas on saga.Queue) and, per group, a worker of its DAG tasks
// (dag.GroupQueue) and one of its saga calls (saga.GroupQueue) over svc;
// stop stops them, letting running tasks finish until its context ends.
// strand worker runs them, and strand server --worker-groups.
func startDAGWorkers(ctx context.Context, svc dag.Service, o dagWorkerOptions) (stop func(context.Context), err error) {
	if o.concurrency < 1 {
		return nil, &usageError{fmt.Errorf("--concurrency %d: want at least 1", o.concurrency)}
	}
	for _, g := range o.groups {
		if !validGroup(g) {
			return nil, &usageError{fmt.Errorf("worker group %q: letters, digits, '_', '.' and '-'", g)}
		}
	}
	dss, err := task.NewDataSources(o.sources)
	if err != nil {
		return nil, &usageError{err}
	}
	if o.identity == "" {
		host, _ := os.Hostname()
		o.identity = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	interp := worker.New(svc, worker.Options{Namespace: o.namespace, Queue: dag.Queue, Identity: o.identity, Logger: o.log})
	dag.Register(interp, svc)
	sagas := worker.New(svc, worker.Options{Namespace: o.namespace, Queue: saga.Queue, Identity: o.identity, Logger: o.log})
	saga.Register(sagas, svc)
	workers := []*worker.Worker{interp, sagas}
	if o.centre != nil {
		dss.SetResolver(dag.DataSourceResolver(o.centre))
	}
	runner := &dag.TaskRunner{Identity: o.identity, DataSources: dss, WorkDir: o.workDir, Centre: o.centre,
		Tenants: dag.NewCatalog(svc).Tenant, RunAs: o.tenants, AllTenants: o.anyTenant, Tools: o.tools}
	calls := &saga.HTTPRunner{Logger: o.log}
	for _, g := range o.groups {
		w := worker.New(svc, worker.Options{Namespace: o.namespace, Queue: dag.GroupQueue(g), Identity: o.identity,
			MaxConcurrentSteps: o.concurrency, StepPollers: min(o.concurrency, 4), Logger: o.log})
		dag.RegisterTasks(w, runner)
		sw := worker.New(svc, worker.Options{Namespace: o.namespace, Queue: saga.GroupQueue(g), Identity: o.identity,
			MaxConcurrentSteps: o.concurrency, StepPollers: min(o.concurrency, 4), Logger: o.log})
		saga.RegisterHTTPSteps(sw, calls)
		workers = append(workers, w, sw)
	}
	stop = func(ctx context.Context) {
		for _, w := range workers {
			if err := w.Stop(ctx); err != nil {
				o.log.Warn("stop worker", "err", err)
			}
		}
		dss.Close()
	}
	for i, w := range workers {
		if err := w.Start(ctx); err != nil {
			for _, started := range workers[:i] {
				started.Stop(context.WithoutCancel(ctx))
			}
			dss.Close()
			return nil, err
		}
	}
	return stop, nil
}

func validGroup(g string) bool {
	if g == "" || len(g) > 100 {
		return false
	}
	for _, r := range g {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// parseDataSource reads NAME=postgres://... or NAME=sqlite:PATH.
func parseDataSource(s string) (task.DataSource, error) {
	name, dsn, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return task.DataSource{}, fmt.Errorf("--datasource %q: want NAME=postgres://... or NAME=sqlite:PATH", s)
	}
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return task.DataSource{Name: name, Driver: "postgres", DSN: dsn}, nil
	case strings.HasPrefix(dsn, "sqlite:"):
		return task.DataSource{Name: name, Driver: "sqlite", DSN: strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")}, nil
	}
	return task.DataSource{}, fmt.Errorf("--datasource %q: want NAME=postgres://... or NAME=sqlite:PATH", s)
}
