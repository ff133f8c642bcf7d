package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/client"
	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
)

// PurgeConfig is one run of the retention purge benchmark.
type PurgeConfig struct {
	Store store.Store
	// N is how many expired runs each phase purges (default 100,000).
	N int
	// Shards is the engine's shard count (0: the engine's default).
	Shards int
	// Batch and Share are the engine's PurgeBatch and PurgeShare (0: the
	// engine's defaults).
	Batch int
	Share float64
	// Baseline is how long shape (a) runs alone, after its warm-up, before
	// the second phase's runs expire (default 20s).
	Baseline time.Duration
	// WarmUp is how long shape (a) runs before its baseline is measured
	// (default 5s).
	WarmUp time.Duration
	// Concurrency is how many shape (a) workflows run at once (default 64,
	// as in Run).
	Concurrency int
	// AloneOnly skips the second phase.
	AloneOnly bool
	// Progress receives progress lines; nil for none.
	Progress io.Writer
	Logger   *slog.Logger
}

// PurgeReport is what the purge benchmark measured.
type PurgeReport struct {
	N int
	// Write is how long writing each phase's N closed runs took.
	Write [2]time.Duration
	// Alone is how long the engine took to purge N runs with nothing
	// else to do, from its open; UnderLoad how long it took while shape
	// (a) ran, from the runs' expiry (the purge looks for expired runs
	// every second when it has none).
	Alone, UnderLoad time.Duration
	// BaseRate is shape (a)'s workflows/s without the purge: the mean of
	// its rate before the purge began and after it ended (Before, After),
	// so that a drift of the machine's load during the run cancels out;
	// LoadRate is its rate while the purge ran, in the same engine and run.
	BaseRate, LoadRate, Before, After float64
	// BaseFor and LoadFor are the windows those rates were measured over
	// (BaseFor before the purge, and as long again after it).
	BaseFor, LoadFor time.Duration
	// Left is the expired runs' visibility records left after each phase
	// (0 when the purge deleted them all).
	Left [2]int64
}

// Ratio is shape (a)'s throughput during the purge over its throughput
// before it.
func (r PurgeReport) Ratio() float64 { return r.LoadRate / r.BaseRate }

// purgeNamespaces are the namespaces of the two phases' expired runs.
var purgeNamespaces = [2]string{"bench-purge-alone", "bench-purge-load"}

// RunPurge measures the retention purge. It writes N closed runs whose
// retention has passed into the store, through the store's Commit API and
// visibility store as a close does (each a copy of a single-step workflow
// the engine ran: its closed state, history, current row, visibility
// record and retention timer), and times an engine purging them with
// nothing else to do. Then it writes N more whose timers come due later,
// opens an engine that runs shape (a) ("sequential", Concurrency at a
// time) until they are purged, and reports shape (a)'s throughput before
// the purge began and while it ran, next to the purge's time.
func RunPurge(ctx context.Context, cfg PurgeConfig) (PurgeReport, error) {
	if cfg.N <= 0 {
		cfg.N = 100000
	}
	if cfg.Baseline <= 0 {
		cfg.Baseline = 20 * time.Second
	}
	if cfg.WarmUp <= 0 {
		cfg.WarmUp = 5 * time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	rep := PurgeReport{N: cfg.N}
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	opts := engine.Options{Logger: cfg.Logger, NumShards: cfg.Shards, PurgeBatch: cfg.Batch, PurgeShare: cfg.Share}
	tmpl, shards, err := purgeTemplate(ctx, cfg.Store, opts)
	if err != nil {
		return rep, fmt.Errorf("template run: %w", err)
	}
	opts.NumShards = shards
	for _, ns := range purgeNamespaces {
		if _, err := cfg.Store.CreateNamespace(ctx, store.Namespace{Name: ns, Retention: time.Hour}); err != nil && !errors.Is(err, store.ErrNamespaceExists) {
			return rep, err
		}
	}

	// Phase 1: the purge alone. The runs' timers are due already, but
	// not earlier than any timer an earlier run of the benchmark left
	// behind: the purge's level has passed those.
	begun := time.Now()
	past := begun.Add(-engine.PurgeSettle - time.Second)
	if err := writeClosedRuns(ctx, cfg.Store, tmpl, purgeNamespaces[0], cfg.N, shards, past.Add(-2*time.Hour), past, say); err != nil {
		return rep, fmt.Errorf("write expired runs: %w", err)
	}
	rep.Write[0] = time.Since(begun)
	say("wrote %d closed runs past their retention in %s", cfg.N, rep.Write[0].Round(time.Millisecond))
	begun = time.Now()
	eng, err := engine.Open(ctx, cfg.Store, opts)
	if err != nil {
		return rep, err
	}
	err = waitPurged(ctx, eng, int64(cfg.N), say)
	rep.Alone = time.Since(begun)
	// The purge's level is persisted with the shard's next commit (within
	// a second): closed sooner, the next engine would purge the last
	// batches again, which the second phase would take for its own.
	sleepCtx(ctx, 2*time.Second)
	eng.Close()
	if err != nil {
		return rep, err
	}
	say("purged %d runs alone in %s", cfg.N, rep.Alone.Round(time.Millisecond))
	if rep.Left[0], err = cfg.Store.CountRuns(ctx, store.RunFilter{Namespace: purgeNamespaces[0]}); err != nil {
		return rep, err
	}

	if cfg.AloneOnly {
		return rep, nil
	}

	// Phase 2: the purge under shape (a). The runs' timers come due once
	// shape (a) has warmed up and run alone for the baseline: the write
	// is expected to take as long as the first (with a margin).
	begun = time.Now()
	due := begun.Add(rep.Write[0]*6/5 + 2*time.Second + cfg.WarmUp + cfg.Baseline)
	fire := due.Add(-engine.PurgeSettle)
	if err := writeClosedRuns(ctx, cfg.Store, tmpl, purgeNamespaces[1], cfg.N, shards, fire.Add(-time.Hour), fire, say); err != nil {
		return rep, fmt.Errorf("write expiring runs: %w", err)
	}
	rep.Write[1] = time.Since(begun)
	if err := purgeUnderLoad(ctx, cfg, opts, due, &rep, say); err != nil {
		return rep, err
	}
	if rep.Left[1], err = cfg.Store.CountRuns(ctx, store.RunFilter{Namespace: purgeNamespaces[1]}); err != nil {
		return rep, err
	}
	return rep, nil
}

// purgeUnderLoad runs shape (a) on a new engine from its open until the
// engine has purged cfg.N runs (the second phase's), which come due at
// due, and measures its throughput before and during the purge.
func purgeUnderLoad(ctx context.Context, cfg PurgeConfig, opts engine.Options, due time.Time, rep *PurgeReport, say func(string, ...any)) error {
	eng, err := engine.Open(ctx, cfg.Store, opts)
	if err != nil {
		return err
	}
	defer eng.Close()
	w := worker.New(eng, worker.Options{Logger: cfg.Logger, Queue: "bench", WorkflowPollers: 8, StepPollers: 16})
	worker.RegisterWorkflowNamed(w, "sequential", sequential)
	worker.RegisterStepNamed(w, "noop", noop)
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Stop(context.Background())
	c := client.New(eng, client.Options{Identity: "bench"})

	lctx, stop := context.WithCancel(ctx)
	defer stop()
	var done atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	run := fmt.Sprintf("purge-load-%d", time.Now().UnixNano())
	var next atomic.Int64
	for range cfg.Concurrency {
		wg.Go(func() {
			for lctx.Err() == nil {
				i := next.Add(1)
				r, err := client.StartByName[int](lctx, c, "sequential", 0, client.StartOptions{ID: fmt.Sprintf("%s-%d", run, i), Queue: "bench"})
				if err == nil {
					_, err = r.Get(lctx)
				}
				if err != nil {
					if lctx.Err() == nil {
						failed.CompareAndSwap(nil, &err)
					}
					return
				}
				done.Add(1)
			}
		})
	}
	defer wg.Wait()
	defer stop()
	check := func() error {
		if p := failed.Load(); p != nil {
			return fmt.Errorf("shape (a): %w", *p)
		}
		return nil
	}

	if !sleepCtx(ctx, cfg.WarmUp) {
		return ctx.Err()
	}
	if eng.Stats().RunsPurged > 0 {
		return fmt.Errorf("the purge began during shape (a)'s warm-up: the second write took %s, past the %s planned", rep.Write[1], rep.Write[0]*6/5)
	}
	baseAt, baseDone := time.Now(), done.Load()
	say("shape (a) warmed up; running alone until the runs expire at %s", due.Format(time.TimeOnly))
	for time.Now().Before(due) {
		if err := check(); err != nil {
			return err
		}
		if eng.Stats().RunsPurged > 0 {
			return fmt.Errorf("the purge began before the runs expired")
		}
		if !sleepCtx(ctx, min(20*time.Millisecond, time.Until(due))) {
			return ctx.Err()
		}
	}
	purgeAt, purgeDone := time.Now(), done.Load()
	rep.BaseFor = purgeAt.Sub(baseAt)
	rep.Before = float64(purgeDone-baseDone) / rep.BaseFor.Seconds()
	say("shape (a) alone: %.0f workflows/s over %s; the runs expired", rep.Before, rep.BaseFor.Round(time.Millisecond))
	if err := waitPurged(ctx, eng, int64(cfg.N), say); err != nil {
		return err
	}
	end, endDone := time.Now(), done.Load()
	rep.UnderLoad = end.Sub(purgeAt)
	rep.LoadFor = rep.UnderLoad
	rep.LoadRate = float64(endDone-purgeDone) / rep.LoadFor.Seconds()
	say("purged %d runs under load in %s; shape (a) meanwhile: %.0f workflows/s", cfg.N, rep.UnderLoad.Round(time.Millisecond), rep.LoadRate)
	if !sleepCtx(ctx, rep.BaseFor) {
		return ctx.Err()
	}
	rep.After = float64(done.Load()-endDone) / time.Since(end).Seconds()
	rep.BaseRate = (rep.Before + rep.After) / 2
	say("shape (a) alone again: %.0f workflows/s", rep.After)
	return check()
}

// waitPurged waits until eng has purged n runs, saying how far it is every
// five seconds.
func waitPurged(ctx context.Context, eng *engine.Engine, n int64, say func(string, ...any)) error {
	last := time.Now()
	for {
		st := eng.Stats()
		if st.RunsPurged >= n {
			return nil
		}
		if time.Since(last) >= 5*time.Second {
			last = time.Now()
			say("  %d of %d purged, lag %s", st.RunsPurged, n, st.PurgeLag.Round(time.Second))
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			return ctx.Err()
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// closedRun is what a close leaves of a single-step workflow: its state
// and history.
type closedRun struct {
	exec    *store.Execution
	history []store.HistoryBlock
}

// purgeTemplate runs one single-step workflow on an engine over st and
// returns what it left in the store, and the store's shard count.
func purgeTemplate(ctx context.Context, st store.Store, opts engine.Options) (closedRun, int, error) {
	var tmpl closedRun
	eng, err := engine.Open(ctx, st, opts)
	if err != nil {
		return tmpl, 0, err
	}
	defer eng.Close()
	shards := eng.Stats().ShardsOwned
	w := worker.New(eng, worker.Options{Logger: opts.Logger, Queue: "bench"})
	worker.RegisterWorkflowNamed(w, "single", single)
	worker.RegisterStepNamed(w, "noop", noop)
	if err := w.Start(ctx); err != nil {
		return tmpl, 0, err
	}
	defer w.Stop(context.Background())
	c := client.New(eng, client.Options{Identity: "bench"})
	id := fmt.Sprintf("purge-template-%d", time.Now().UnixNano())
	r, err := client.StartByName[int](ctx, c, "single", 1, client.StartOptions{ID: id, Queue: "bench"})
	if err != nil {
		return tmpl, 0, err
	}
	if _, err := r.Get(ctx); err != nil {
		return tmpl, 0, err
	}
	k := store.RunKey{Namespace: api.DefaultNamespace, WorkflowID: id, RunID: r.RunID}
	shard := engine.ShardOf(k.Namespace, k.WorkflowID, shards)
	if tmpl.exec, err = st.GetExecution(ctx, shard, k); err != nil {
		return tmpl, 0, err
	}
	var token []byte
	for {
		page, err := st.ReadHistory(ctx, store.ReadHistoryRequest{ShardID: shard, Run: k, PageToken: token})
		if err != nil {
			return tmpl, 0, err
		}
		tmpl.history = append(tmpl.history, page.Blocks...)
		if token = page.NextPageToken; len(token) == 0 {
			break
		}
	}
	return tmpl, shards, nil
}

// writeBatch is how many closed runs one commit of writeClosedRuns holds.
const writeBatch = 500

// writeClosedRuns writes n copies of tmpl into namespace ns, closed at
// closed and started an hour before, with retention timers that fire at
// fire: per shard, as an owner that takes the shard and hands it back
// after; the shards in parallel.
func writeClosedRuns(ctx context.Context, st store.Store, tmpl closedRun, ns string, n, shards int, started, fire time.Time, say func(string, ...any)) error {
	prefix := uuid.NewString()[:8]
	byShard := make([][]store.RunKey, shards)
	for i := range n {
		k := store.RunKey{Namespace: ns, WorkflowID: fmt.Sprintf("purge-%s-%07d", prefix, i), RunID: uuid.Must(uuid.NewV7()).String()} // as the engine makes them
		s := engine.ShardOf(ns, k.WorkflowID, shards)
		byShard[s] = append(byShard[s], k)
	}
	var written atomic.Int64
	errs := make([]error, shards)
	var wg sync.WaitGroup
	for s := range shards {
		wg.Go(func() {
			errs[s] = writeShard(ctx, st, tmpl, int32(s), byShard[s], started, fire, func(k int) {
				if v := written.Add(int64(k)); v%100000 < int64(k) {
					say("  wrote %d of %d", v, n)
				}
			})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func writeShard(ctx context.Context, st store.Store, tmpl closedRun, shard int32, keys []store.RunKey, started, fire time.Time, progress func(int)) error {
	sh, err := st.AcquireShard(ctx, store.AcquireShardRequest{ShardID: shard, Owner: "strand-bench-purge"})
	if err != nil {
		return err
	}
	next, limit := sh.TaskIDBlock()
	closed := fire.Add(-time.Hour)
	for i := 0; i < len(keys); i += writeBatch {
		part := keys[i:min(i+writeBatch, len(keys))]
		b := &store.Batch{ShardID: shard}
		recs := make([]store.VisibilityRecord, 0, len(part))
		for _, k := range part {
			if next+2 > limit {
				if sh, err = st.AcquireShard(ctx, store.AcquireShardRequest{ShardID: shard, Owner: "strand-bench-purge", PrevRangeID: sh.RangeID}); err != nil {
					return err
				}
				next, limit = sh.TaskIDBlock()
			}
			x := *tmpl.exec
			x.RunKey = k
			x.Info.CreateRequestID = uuid.NewString()
			x.Info.StartTime, x.Info.CloseTime = store.Time(started), store.Time(closed)
			history := make([]store.HistoryBlock, len(tmpl.history))
			for j, h := range tmpl.history {
				h.TxnID = next
				history[j] = h
			}
			next++
			b.Runs = append(b.Runs, store.RunWrite{Execution: &x, Current: store.CurrentCreate, History: history})
			task := engine.RetentionTask(k, fire)
			task.Key.TaskID = next
			next++
			b.Tasks = append(b.Tasks, task)
			recs = append(recs, store.VisibilityRecord{Namespace: k.Namespace, WorkflowID: k.WorkflowID, RunID: k.RunID, Type: x.Info.Type,
				Status: x.Status, StartTime: x.Info.StartTime, CloseTime: x.Info.CloseTime, Version: x.DBVersion})
		}
		b.RangeID = sh.RangeID
		if err := st.Commit(ctx, b); err != nil {
			return fmt.Errorf("write closed runs to shard %d: %w", shard, err)
		}
		if err := st.UpsertVisibility(ctx, recs...); err != nil {
			return fmt.Errorf("write visibility records: %w", err)
		}
		progress(len(part))
	}
	// Handed back, so the engine takes it as handed over.
	_, err = st.AcquireShard(ctx, store.AcquireShardRequest{ShardID: shard, PrevRangeID: sh.RangeID})
	return err
}

// PrintPurge writes the purge benchmark's report.
func PrintPurge(w io.Writer, backend string, rep PurgeReport) {
	rate := func(d time.Duration) float64 { return float64(rep.N) / d.Seconds() }
	fmt.Fprintf(w, "%s: %d closed runs per phase (written through the store's Commit API in %s and %s)\n", backend, rep.N,
		rep.Write[0].Round(time.Millisecond), rep.Write[1].Round(time.Millisecond))
	fmt.Fprintf(w, "purge alone:       %10s  %8.0f runs/s\n", rep.Alone.Round(time.Millisecond), rate(rep.Alone))
	if rep.UnderLoad == 0 {
		return
	}
	fmt.Fprintf(w, "purge under load:  %10s  %8.0f runs/s\n", rep.UnderLoad.Round(time.Millisecond), rate(rep.UnderLoad))
	fmt.Fprintf(w, "shape (a) alone:   %8.0f workflows/s (%.0f over %s before the purge, %.0f as long after)\n", rep.BaseRate, rep.Before,
		rep.BaseFor.Round(time.Millisecond), rep.After)
	fmt.Fprintf(w, "shape (a) purging: %8.0f workflows/s (over %s)\n", rep.LoadRate, rep.LoadFor.Round(time.Millisecond))
	fmt.Fprintf(w, "throughput ratio:  %8.2f\n", rep.Ratio())
	if rep.Left[0] != 0 || rep.Left[1] != 0 {
		fmt.Fprintf(w, "visibility records of purged runs left: %d, %d\n", rep.Left[0], rep.Left[1])
	}
}
