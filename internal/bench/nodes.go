package bench

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/system"
	"github.com/strandhq/strand/worker"
)

// nodes are what a benchmark runs on: an engine it opened in this process
// over a store, or running servers (a cluster's nodes, or one server)
// reached over HTTP through their services. Each node has the benchmark's
// workers in this process, and the callers spread their calls over the
// nodes in turn.
type nodes struct {
	svcs []api.Service
	// eng is the engine opened in this process; nil through servers.
	eng     *engine.Engine
	running []runnable
}

// runnable is what a benchmark runs beside a node: a worker, the system
// workflows' runner.
type runnable interface {
	Start(context.Context) error
	Stop(context.Context) error
}

// openNodes opens an engine over st with opts, unless svcs (the services
// of running servers) are given, and starts for each node what start
// returns for its service; close stops them and closes the engine.
func openNodes(ctx context.Context, st store.Store, svcs []api.Service, opts engine.Options, start func(svc api.Service) ([]runnable, error)) (*nodes, error) {
	n := &nodes{svcs: svcs}
	if len(svcs) == 0 {
		if st == nil {
			return nil, fmt.Errorf("%w: no store and no server to run on", store.ErrInvalidArgument)
		}
		eng, err := engine.Open(ctx, st, opts)
		if err != nil {
			return nil, err
		}
		n.eng, n.svcs = eng, []api.Service{eng}
	}
	for _, svc := range n.svcs {
		rs, err := start(svc)
		for _, r := range rs {
			if err != nil {
				break
			}
			if err = r.Start(ctx); err == nil {
				n.running = append(n.running, r)
			}
		}
		if err != nil {
			n.close(ctx)
			return nil, err
		}
	}
	return n, nil
}

// close stops what runs beside the nodes, last started first, and closes
// the engine.
func (n *nodes) close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for _, r := range slices.Backward(n.running) {
		r.Stop(ctx)
	}
	if n.eng != nil {
		n.eng.Close()
	}
}

// svc is the service of the node the i-th call goes to.
func (n *nodes) svc(i int) api.Service { return n.svcs[i%len(n.svcs)] }

// clients are a client of each node.
func (n *nodes) clients(identity string) []*client.Client {
	cs := make([]*client.Client, len(n.svcs))
	for i, svc := range n.svcs {
		cs[i] = client.New(svc, client.Options{Identity: identity})
	}
	return cs
}

// embedded is what the benchmark reads of the engine in this process:
// nothing through servers.
func (n *nodes) embedded() embedded {
	if n.eng == nil {
		return embedded{stats: func() engine.Stats { return engine.Stats{} }, syncVisibility: func(context.Context) error { return nil }}
	}
	return embedded{stats: n.eng.Stats, syncVisibility: n.eng.SyncVisibility}
}

// frontEndClients are a front end's clients (dag.NewClient,
// statemachine.NewClient), one of each node, in the default namespace.
func frontEndClients[C any](n *nodes, newClient func(api.FrontEndService, string) *C) ([]*C, error) {
	cs := make([]*C, len(n.svcs))
	for i, svc := range n.svcs {
		fe, err := frontEnd(svc)
		if err != nil {
			return nil, err
		}
		cs[i] = newClient(fe, "")
	}
	return cs, nil
}

// frontEnd is svc as the front ends (DAGs, state machines) need it: with
// the stored definitions. The engine and a remote service are both.
func frontEnd(svc api.Service) (api.FrontEndService, error) {
	fe, ok := svc.(api.FrontEndService)
	if !ok {
		return nil, fmt.Errorf("%w: %T keeps no definitions", store.ErrInvalidArgument, svc)
	}
	return fe, nil
}

// withSystemRunner adds to w the system workflows' runner (schedules,
// batches, mailboxes) over svc, unless the node is a server, which runs
// its own (strand server does).
func withSystemRunner(w *worker.Worker, svc api.Service, server bool, log *slog.Logger) []runnable {
	if server {
		return []runnable{w}
	}
	return []runnable{w, system.NewRunner(svc, system.RunnerOptions{Logger: log, Worker: worker.Options{Logger: log}})}
}
