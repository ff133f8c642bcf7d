package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/message"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// MessagesConfig is one run of the messages benchmark.
type MessagesConfig struct {
	// Store runs an embedded engine, with the system workflows' runner (the
	// mailboxes); Services (the nodes of a running cluster, or one server,
	// which runs the mailboxes itself) are measured instead when set: a
	// worker of the receivers and a client per node, calls spread over
	// them in turn.
	Store    store.Store
	Services []api.Service
	// N is how many runs wait, one message each (default 10,000).
	N int
	// Senders is how many messages are sent at once (default 64).
	Senders  int
	Progress io.Writer
	Logger   *slog.Logger
}

// MessagesReport is what the messages benchmark measured: the same N
// waiting runs reached by correlated messages and, as the baseline, by
// signals addressed by workflow id.
type MessagesReport struct {
	N, Senders int
	Messages   DeliveryFigures
	Signals    DeliveryFigures
}

// DeliveryFigures are one way of reaching N waiting runs.
type DeliveryFigures struct {
	// Prepare is how long it took until all N waited (for messages: until
	// every mailbox had its waiter).
	Prepare time.Duration
	// Elapsed is from the first send to the last run's completion.
	Elapsed time.Duration
	// PerSecond is N / Elapsed.
	PerSecond float64
	// Send is the latency of the send call (until it was acknowledged).
	SendP50, SendP99 time.Duration
	// Delivery is from the send to the workflow task that handed the
	// message to its run (the run's workflow.Now).
	DeliveryP50, DeliveryP99, DeliveryMax time.Duration
}

// ReceiverInput is what a MessageReceiver waits for: the signal "bench",
// or the message Name keyed by its workflow id.
type ReceiverInput struct {
	Signal bool   `json:"signal,omitempty"`
	Name   string `json:"name,omitempty"`
}

// MessageReceiver waits for its message (or signal) and returns how long
// after its sending it got it.
func MessageReceiver(ctx workflow.Context, in ReceiverInput) (time.Duration, error) {
	var sent time.Time
	if in.Signal {
		v, _ := workflow.GetSignalChannel[time.Time](ctx, "bench").Receive(ctx)
		sent = v
	} else {
		m, err := workflow.ReceiveMessage(ctx, in.Name, workflow.GetInfo(ctx).WorkflowID).Get(ctx)
		if err != nil {
			return 0, err
		}
		if err := json.Unmarshal(m.Payload, &sent); err != nil {
			return 0, err
		}
	}
	return workflow.Now(ctx).Sub(sent), nil
}

// receiverQueue is the receivers' task queue: their own, so that on a
// server no other worker takes their tasks.
const receiverQueue = "bench.messages"

// RunMessages measures the delivery of N correlated messages to N runs
// waiting for them, beside N signals to N runs waiting for a signal.
func RunMessages(ctx context.Context, cfg MessagesConfig) (MessagesReport, error) {
	if cfg.N <= 0 {
		cfg.N = 10000
	}
	if cfg.Senders <= 0 {
		cfg.Senders = 64
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	rep := MessagesReport{N: cfg.N, Senders: cfg.Senders}
	nodes, err := openNodes(ctx, cfg.Store, cfg.Services, engine.Options{Logger: log}, func(svc api.Service) ([]runnable, error) {
		w := worker.New(svc, worker.Options{Queue: receiverQueue, Logger: log})
		worker.RegisterWorkflow(w, MessageReceiver)
		return withSystemRunner(w, svc, len(cfg.Services) > 0, log), nil
	})
	if err != nil {
		return rep, err
	}
	defer nodes.close(ctx)
	// A server sends messages itself; the engine needs the message
	// service over it.
	msgs := make([]api.Messages, len(nodes.svcs))
	for i, svc := range nodes.svcs {
		var ok bool
		if msgs[i], ok = svc.(api.Messages); !ok {
			msgs[i] = message.NewService(svc)
		}
	}
	// The runs' ids and the message's name are this run's own, so that a
	// server's runs and mailboxes of an earlier run are not counted.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	name := "bench-" + run

	say("signals: starting %d runs that wait for a signal...", cfg.N)
	rep.Signals, err = measureDelivery(ctx, nodes, cfg, "signal-"+run, ReceiverInput{Signal: true}, func(ctx context.Context) error {
		return nil // a run waits for its signal once it started
	}, func(ctx context.Context, i int, id string, sent time.Time) error {
		raw, _ := json.Marshal(sent)
		return nodes.svc(i).SignalWorkflow(ctx, api.SignalRequest{RunRef: api.RunRef{WorkflowID: id}, Name: "bench", Input: raw})
	})
	if err != nil {
		return rep, err
	}
	say("signals: %.0f/s; messages: starting %d runs that wait for a message...", rep.Signals.PerSecond, cfg.N)
	e := nodes.embedded()
	rep.Messages, err = measureDelivery(ctx, nodes, cfg, "message-"+run, ReceiverInput{Name: name}, func(ctx context.Context) error {
		for {
			if err := e.syncVisibility(ctx); err != nil {
				return err
			}
			n, err := nodes.svc(0).CountWorkflows(ctx, api.ListRequest{WorkflowType: api.MailboxWorkflowType,
				Statuses: []store.RunStatus{store.StatusRunning}, Attributes: map[string]string{"strand.message.waiting": "1", "strand.message.name": name}})
			if err != nil {
				return err
			}
			if n >= int64(cfg.N) {
				return nil
			}
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return ctx.Err()
			}
		}
	}, func(ctx context.Context, i int, id string, sent time.Time) error {
		raw, _ := json.Marshal(sent)
		_, err := msgs[i%len(msgs)].SendMessage(ctx, api.SendMessageRequest{Name: name, CorrelationKey: id, Payload: raw})
		return err
	})
	return rep, err
}

// measureDelivery starts N receivers of in, their ids prefix-0 to
// prefix-(N-1), waits until ready says they all wait, then sends to each
// and waits for every result.
func measureDelivery(ctx context.Context, nodes *nodes, cfg MessagesConfig, prefix string, in ReceiverInput,
	ready func(context.Context) error, send func(ctx context.Context, i int, id string, sent time.Time) error) (DeliveryFigures, error) {
	var f DeliveryFigures
	input, err := json.Marshal(in)
	if err != nil {
		return f, err
	}
	ids := make([]string, cfg.N)
	for i := range ids {
		ids[i] = prefix + "-" + strconv.Itoa(i)
	}
	t0 := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Senders)
	for i, id := range ids {
		g.Go(func() error {
			_, err := nodes.svc(i).StartWorkflow(gctx, api.StartRequest{WorkflowID: id, WorkflowType: "MessageReceiver", Queue: receiverQueue, Input: input})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return f, fmt.Errorf("start the receivers: %w", err)
	}
	if err := ready(ctx); err != nil {
		return f, err
	}
	f.Prepare = time.Since(t0)

	var mu sync.Mutex
	sends := make([]time.Duration, 0, cfg.N)
	start := time.Now()
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(cfg.Senders)
	for i, id := range ids {
		g.Go(func() error {
			at := time.Now()
			if err := send(gctx, i, id, at); err != nil {
				return fmt.Errorf("send to %s: %w", id, err)
			}
			mu.Lock()
			sends = append(sends, time.Since(at))
			mu.Unlock()
			return nil
		})
	}
	delivered := make([]time.Duration, 0, cfg.N)
	var last time.Time
	r, rctx := errgroup.WithContext(ctx)
	r.SetLimit(cfg.Senders)
	for i, id := range ids {
		r.Go(func() error {
			res, err := nodes.svc(i).WaitResult(rctx, api.ResultRequest{RunRef: api.RunRef{WorkflowID: id}})
			if err != nil {
				return err
			}
			if res.Status != store.StatusCompleted {
				return fmt.Errorf("%s %s: %s", id, res.Status, res.Failure)
			}
			var d time.Duration
			if err := json.Unmarshal(res.Output, &d); err != nil {
				return err
			}
			mu.Lock()
			delivered = append(delivered, d)
			if res.CloseTime.After(last) {
				last = res.CloseTime
			}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return f, err
	}
	if err := r.Wait(); err != nil {
		return f, err
	}
	f.Elapsed = last.Sub(start)
	f.PerSecond = float64(cfg.N) / f.Elapsed.Seconds()
	slices.Sort(sends)
	slices.Sort(delivered)
	n := len(delivered)
	f.SendP50, f.SendP99 = sends[n/2], sends[min(n-1, n*99/100)]
	f.DeliveryP50, f.DeliveryP99, f.DeliveryMax = delivered[n/2], delivered[min(n-1, n*99/100)], delivered[n-1]
	return f, nil
}

// PrintMessages writes the report.
func PrintMessages(w io.Writer, backend string, rep MessagesReport) {
	fmt.Fprintf(w, "messages on %s: %d runs waiting, one each, %d sends at once\n", backend, rep.N, rep.Senders)
	for _, row := range []struct {
		name string
		f    DeliveryFigures
	}{{"correlated messages (name and key)", rep.Messages}, {"signals (by workflow id), the baseline", rep.Signals}} {
		f := row.f
		fmt.Fprintf(w, "  %s: %.0f delivered/s (all %d in %s, after %s to have them all waiting)\n", row.name, f.PerSecond, rep.N,
			f.Elapsed.Round(time.Millisecond), f.Prepare.Round(time.Millisecond))
		fmt.Fprintf(w, "    send acknowledged: p50 %s, p99 %s; send to delivery: p50 %s, p99 %s, max %s\n",
			f.SendP50.Round(time.Microsecond*100), f.SendP99.Round(time.Microsecond*100),
			f.DeliveryP50.Round(time.Millisecond), f.DeliveryP99.Round(time.Millisecond), f.DeliveryMax.Round(time.Millisecond))
	}
	if rep.Signals.PerSecond > 0 {
		fmt.Fprintf(w, "  ratio of rates (messages / signals): %.2f\n", rep.Messages.PerSecond/rep.Signals.PerSecond)
	}
}
