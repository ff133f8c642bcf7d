package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// A cluster is several engines (nodes) over one store. Each node
// heartbeats in the nodes table; the shards are placed over the live nodes
// by rendezvous hashing (placement.go); a controller on every node takes
// the shards placement gives it and hands back the ones it gives another.
// Taking a shard raises its range_id, which fences the previous owner: its
// next write fails and it drops the shard. Calls for a shard another node
// owns are forwarded to it (route), and workers waiting on one node get the
// tasks of other nodes' shards through forwarded polls (legs.go).
//
// An engine without Options.Dial is alone over its store: it takes every
// shard when it opens and never forwards.

var _ api.Cluster = (*Engine)(nil)

// cluster is the engine's view of the other nodes and its controller's
// state.
type cluster struct {
	view     atomic.Pointer[view]
	ready    atomic.Bool
	lastBeat atomic.Int64 // unix nanos at which the last heartbeat that landed began
	// lapsed: a heartbeat landed more than a TTL after the one before (the
	// node was paused or cut off); the controller checks its shards.
	lapsed  atomic.Bool
	started time.Time
	wake    chan struct{}

	// waiting: shards placement gives this node that a live node still
	// holds, since when (the controller's alone).
	waiting map[int32]time.Time
	// predecessors are the earlier processes that served this node's
	// address on this host (set by join, before the controller starts): a
	// shard one of them left behind is taken back after a restart, not
	// over from another node.
	predecessors map[string]bool

	peerMu sync.Mutex
	peers  map[string]api.Peer

	legMu   sync.Mutex
	legs    map[legKey]int // running legs
	closing bool           // Close began: no leg starts

	// callMu guards calls: the forwarded calls in flight, by the node they
	// went to, so they can be given up when that node leaves.
	callMu sync.Mutex
	calls  map[string]map[*context.CancelCauseFunc]struct{}
}

// view is the live nodes as the controller last read them.
type view struct {
	nodes []string          // ids, sorted, this node's among them
	addr  map[string]string // id → address
}

func (v *view) live(id string) bool { _, ok := v.addr[id]; return ok }

// errNotOwner: this node does not serve the shard (any more, or yet); the
// call changed nothing and may be retried where the shard is.
var errNotOwner = fmt.Errorf("%w: shard not served here", api.ErrUnavailable)

// errPeerLost: a forwarded call was given up because the node it went to
// left the live nodes mid-call; the shard's next owner serves it.
var errPeerLost = fmt.Errorf("%w: the node serving the call left the cluster", api.ErrUnavailable)

func (e *Engine) clustered() bool { return e.opts.Dial != nil }

// tick is how often the controller looks at the nodes table.
func (e *Engine) tick() time.Duration { return max(100*time.Millisecond, e.opts.NodeTTL/10) }

// join registers the node, takes the shards it should own now and starts
// the heartbeat and the controller.
func (e *Engine) join(ctx context.Context) error {
	c := &e.cluster
	c.started, c.wake = store.Now(), make(chan struct{}, 1)
	c.waiting, c.peers, c.legs = map[int32]time.Time{}, map[string]api.Peer{}, map[legKey]int{}
	c.predecessors = map[string]bool{}
	if err := e.beat(ctx); err != nil {
		return fmt.Errorf("engine: register node: %w", err)
	}
	if e.clustered() {
		e.forgetPredecessors(ctx)
	}
	if err := e.place(ctx); err != nil {
		return err
	}
	e.wg.Go(func() { e.heartbeat(e.ctx) })
	if e.clustered() {
		e.wg.Go(func() { e.control(e.ctx) })
	}
	return nil
}

// beat records this node's heartbeat.
func (e *Engine) beat(ctx context.Context) error {
	host, _ := os.Hostname()
	began := time.Now()
	now := store.Now()
	n := store.Node{ID: e.opts.Identity, Host: host, PID: int32(os.Getpid()), Address: e.opts.Address,
		StartedAt: e.cluster.started, HeartbeatAt: now, ExpiresAt: now.Add(e.opts.NodeTTL)}
	if err := e.store.UpsertNode(ctx, n); err != nil {
		return err
	}
	if prev := e.cluster.lastBeat.Swap(began.UnixNano()); prev != 0 && began.Sub(time.Unix(0, prev)) > e.opts.NodeTTL {
		e.cluster.lapsed.Store(true)
		e.wakeController()
	}
	return nil
}

// heartbeat keeps the node alive until ctx ends.
func (e *Engine) heartbeat(ctx context.Context) {
	every(ctx, e.opts.NodeTTL/3, nil, func() {
		if err := e.beat(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("node heartbeat", "err", err)
		}
	})
}

// forgetPredecessors removes the rows of earlier processes that served this
// node's address on this host: they are gone (this process has the
// address), so their shards need not wait for their heartbeat to expire.
func (e *Engine) forgetPredecessors(ctx context.Context) {
	if e.opts.Address == "" {
		return
	}
	host, _ := os.Hostname()
	nodes, err := e.store.ListNodes(ctx, time.Time{}) // expired rows too: a restart may come late
	if err != nil {
		e.log.Warn("list nodes: earlier processes at this address keep their rows until they expire", "err", err)
		return
	}
	for _, n := range nodes {
		if n.ID != e.opts.Identity && n.Host == host && n.Address == e.opts.Address {
			e.cluster.predecessors[n.ID] = true
			e.log.Info("removing the row of an earlier process at this address", "node", n.ID)
			if err := e.store.DeleteNode(ctx, n.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				e.log.Warn("remove earlier node", "node", n.ID, "err", err)
			}
		}
	}
}

// control runs the controller until ctx ends.
func (e *Engine) control(ctx context.Context) {
	every(ctx, e.tick(), e.cluster.wake, func() {
		if err := e.place(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("shard placement", "err", err)
		}
	})
}

// wakeController asks the controller to look again now (a shard was lost).
func (e *Engine) wakeController() {
	select {
	case e.cluster.wake <- struct{}{}:
	default:
	}
}

// place makes this node own what placement gives it: it drops lost shards,
// hands back those that belong to another node now and takes its own.
func (e *Engine) place(ctx context.Context) error {
	v, err := e.refreshView(ctx)
	if err != nil {
		return err
	}
	e.checkLease(ctx)
	owned := map[int32]bool{}
	for _, s := range e.owned() {
		if s.isLost() {
			e.dropShard(s)
			continue
		}
		owned[s.id] = true
	}
	if !e.clustered() && len(owned) > 0 {
		// Alone: the shards were taken at Open; one lost to another engine
		// is not fought over.
		e.cluster.ready.Store(len(owned) == e.opts.NumShards)
		return nil
	}
	acquire, release := placementChange(e.opts.Identity, e.opts.NumShards, v.nodes, owned)
	for id := range e.cluster.waiting {
		if !slices.Contains(acquire, id) {
			delete(e.cluster.waiting, id) // placement moved on: a later wait starts afresh
		}
	}
	// The shards go back at once, not one after the other: a node that
	// joins waits one node TTL for a live owner to hand a shard over
	// before it takes the shard as abandoned, and a handover (stop the
	// shard, then a conditional write) takes a few hundred milliseconds on
	// a busy Cassandra.
	var handingBack sync.WaitGroup
	for _, id := range release {
		handingBack.Go(func() { e.handBack(ctx, id) })
	}
	handingBack.Wait()
	all := true
	for _, id := range acquire {
		if err := e.take(ctx, id, v); err != nil {
			if !e.clustered() {
				return fmt.Errorf("engine: acquire shard %d: %w", id, err)
			}
			all = false
			if !errors.Is(err, errWaitHandover) {
				e.log.Warn("acquire shard", "shard", id, "err", err)
			}
		}
	}
	e.cluster.ready.Store(all)
	return nil
}

// refreshView reads the live nodes; this node is always among them.
func (e *Engine) refreshView(ctx context.Context) (*view, error) {
	v := &view{addr: map[string]string{e.opts.Identity: e.opts.Address}}
	if e.clustered() {
		nodes, err := e.store.ListNodes(ctx, store.Now())
		if err != nil {
			if old := e.cluster.view.Load(); old != nil {
				e.log.Warn("list nodes; placing shards by the last view", "err", err)
				return old, nil
			}
			return nil, fmt.Errorf("engine: list nodes: %w", err)
		}
		for _, n := range nodes {
			v.addr[n.ID] = n.Address
		}
	}
	for id := range v.addr {
		v.nodes = append(v.nodes, id)
	}
	slices.Sort(v.nodes)
	e.setView(v)
	return v, nil
}

// setView makes v the engine's view of the nodes, and gives up the
// forwarded calls in flight to nodes it no longer lists.
func (e *Engine) setView(v *view) {
	e.cluster.view.Store(v)
	e.cluster.callMu.Lock()
	for node, calls := range e.cluster.calls {
		if !v.live(node) {
			for cancel := range calls {
				(*cancel)(errPeerLost)
			}
			delete(e.cluster.calls, node)
		}
	}
	e.cluster.callMu.Unlock()
}

// checkLease: when this node's heartbeat has not landed for longer than its
// TTL (it was paused, or cut off from the store), the other nodes may have
// taken its shards. It asks the store which shards are still its own and
// drops the others before serving anything more from memory.
func (e *Engine) checkLease(ctx context.Context) {
	since := time.Since(time.Unix(0, e.cluster.lastBeat.Load()))
	if lapsed := e.cluster.lapsed.Swap(false); since <= e.opts.NodeTTL && !lapsed {
		return
	}
	e.log.Warn("node lease expired; checking shard ownership", "since_heartbeat", since.Round(time.Millisecond))
	for _, s := range e.owned() {
		sh, err := e.store.GetShard(ctx, s.id)
		s.mu.Lock()
		mine := err == nil && sh.RangeID == s.rangeID && sh.Owner == e.opts.Identity
		s.mu.Unlock()
		if !mine {
			e.log.Warn("shard taken over while this node was away", "shard", s.id, "err", err)
			s.markLost()
		}
	}
	if err := e.beat(ctx); err != nil && ctx.Err() == nil {
		e.log.Warn("node heartbeat", "err", err)
	}
}

var errWaitHandover = errors.New("engine: waiting for the owner to hand the shard over")

// take acquires shard id. A shard a live node holds is left to that node
// for one node TTL, to hand it over; then it is taken anyway. The owner
// sees the new view within a controller tick (a tenth of the TTL), but on a
// loaded machine stopping the shard and the conditional release can take
// a second or more, and a shard taken from a live owner makes its runs go
// through recovery.
func (e *Engine) take(ctx context.Context, id int32, v *view) error {
	prev, prevRange := "", int64(0)
	sh, err := e.store.GetShard(ctx, id)
	switch {
	case err == nil:
		prev, prevRange = sh.Owner, sh.RangeID
	case !errors.Is(err, store.ErrShardNotFound):
		return err
	}
	if prev != "" && prev != e.opts.Identity && v.live(prev) {
		first, ok := e.cluster.waiting[id]
		if !ok {
			e.cluster.waiting[id] = time.Now()
			return errWaitHandover
		}
		if time.Since(first) < e.opts.NodeTTL {
			return errWaitHandover
		}
		e.log.Warn("taking a shard its live owner did not hand over", "shard", id, "owner", prev)
	}
	delete(e.cluster.waiting, id)
	s := newShard(e, id)
	s.ctx, s.cancel = context.WithCancel(e.ctx)
	// A shard released on a clean shutdown has no owner; one that still
	// names an owner (another node, or an earlier life of this one) was
	// abandoned.
	s.takenFrom = prev
	s.restarted = prev == e.opts.Identity || e.cluster.predecessors[prev] || !e.clustered()
	// The take is conditional on the range read above: when another node
	// took the shard in between, prev is stale (two nodes would both record
	// a takeover from it), and the next tick reads the shard again.
	if err := s.acquire(ctx, prevRange); err != nil {
		s.cancel()
		return err
	}
	e.shardMu.Lock()
	e.shards[id] = s
	e.shardMu.Unlock()
	e.wg.Go(s.run)
	e.log.Log(ctx, e.placementLevel(), "shard acquired", "shard", id, "from", prev)
	return nil
}

// handBack stops serving shard id and releases it in the store, so that
// its next owner takes it at once and knows nothing was abandoned.
func (e *Engine) handBack(ctx context.Context, id int32) {
	e.shardMu.Lock()
	s := e.shards[id]
	e.shards[id] = nil
	e.shardMu.Unlock()
	if s == nil {
		return
	}
	s.stop()
	s.mu.Lock()
	rangeID, lost := s.rangeID, s.lost
	s.mu.Unlock()
	if lost {
		return
	}
	if _, err := e.store.AcquireShard(ctx, store.AcquireShardRequest{ShardID: id, PrevRangeID: rangeID}); err != nil && ctx.Err() == nil {
		e.log.Warn("release shard", "shard", id, "err", err)
		return
	}
	e.log.Log(ctx, e.placementLevel(), "shard handed back", "shard", id)
}

// placementLevel is the log level of shard moves: news in a cluster, routine
// for an engine alone.
func (e *Engine) placementLevel() slog.Level {
	if e.clustered() {
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// dropShard forgets a shard that another node took.
func (e *Engine) dropShard(s *shard) {
	e.shardMu.Lock()
	if e.shards[s.id] == s {
		e.shards[s.id] = nil
	}
	e.shardMu.Unlock()
	s.stop()
	e.log.Warn("shard dropped: another node owns it", "shard", s.id)
}

// leave hands every shard back and removes the node from the nodes table
// (Close, after the engine's goroutines stopped).
func (e *Engine) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if e.clustered() {
		e.giveBackBorrowed(ctx)
	}
	for _, s := range e.owned() {
		e.handBack(ctx, s.id)
	}
	if e.cluster.wake == nil {
		return // never joined
	}
	if err := e.store.DeleteNode(ctx, e.opts.Identity); err != nil && !errors.Is(err, store.ErrNotFound) {
		e.log.Warn("remove node", "err", err)
	}
}

// peer returns the API of the node at addr.
func (e *Engine) peer(addr string) api.Peer {
	c := &e.cluster
	c.peerMu.Lock()
	defer c.peerMu.Unlock()
	p := c.peers[addr]
	if p == nil {
		p = e.opts.Dial(addr)
		c.peers[addr] = p
	}
	return p
}

// ownerPeer returns the node placement gives shard id to, when that is
// another node this one can reach.
func (e *Engine) ownerPeer(id int32) (node string, p api.Peer) {
	v := e.cluster.view.Load()
	if v == nil || !e.clustered() {
		return "", nil
	}
	owner := shardOwner(id, v.nodes)
	if owner == e.opts.Identity || v.addr[owner] == "" {
		return "", nil
	}
	return owner, e.peer(v.addr[owner])
}

// callPeer runs remote with the API of node, marked forwarded. A node
// paused past its lease would hold the call until the caller's deadline,
// so the call is given up (errPeerLost) once node drops out of the live
// nodes; by then its shards are another node's, and fencing keeps any
// write it makes on waking from landing.
func (e *Engine) callPeer(ctx context.Context, node string, p api.Peer, remote func(context.Context, api.Peer) error) error {
	cctx, cancel := context.WithCancelCause(api.WithForwarded(ctx))
	defer cancel(nil)
	c := &e.cluster
	c.callMu.Lock()
	if v := c.view.Load(); v != nil && !v.live(node) {
		c.callMu.Unlock()
		return errPeerLost
	}
	if c.calls == nil {
		c.calls = map[string]map[*context.CancelCauseFunc]struct{}{}
	}
	if c.calls[node] == nil {
		c.calls[node] = map[*context.CancelCauseFunc]struct{}{}
	}
	c.calls[node][&cancel] = struct{}{}
	c.callMu.Unlock()
	defer func() {
		c.callMu.Lock()
		delete(c.calls[node], &cancel)
		if len(c.calls[node]) == 0 {
			delete(c.calls, node)
		}
		c.callMu.Unlock()
	}()
	err := remote(cctx, p)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), errPeerLost) {
		return errPeerLost
	}
	return err
}

// route runs local on the shard of a workflow id when this node serves it,
// or remote with the node that does. While the shard changes hands (its
// owner died, or is handing it over) the call waits and tries again, for
// up to twice the node TTL; when the node a call went to leaves the
// cluster, from then on. A forwarded call is never forwarded again. A
// local call whose commit found the run changed under it (the store's
// condition failed: the shard's cache was stale, as it is after a
// takeover; nothing was written, and the run is read anew) is tried
// again the same way.
func (e *Engine) route(ctx context.Context, ns, workflowID string, local func(*shard) error, remote func(context.Context, api.Peer) error) error {
	id := e.shardID(nsOrDefault(ns), workflowID)
	deadline := time.Now().Add(2 * e.opts.NodeTTL)
	delay := 10 * time.Millisecond
	for {
		var err error
		if s := e.local(id); s != nil {
			if err = local(s); !errors.Is(err, errNotOwner) && !errors.Is(err, store.ErrConditionFailed) {
				return err
			}
		} else if node, p := e.ownerPeer(id); p != nil && !api.Forwarded(ctx) {
			if err = e.callPeer(ctx, node, p, remote); !errors.Is(err, api.ErrUnavailable) {
				return err
			}
			if errors.Is(err, errPeerLost) {
				deadline = time.Now().Add(2 * e.opts.NodeTTL)
			}
		} else {
			err = fmt.Errorf("%w: shard %d", errNotOwner, id)
			if api.Forwarded(ctx) || !e.clustered() {
				return err // the sender tries again; alone, no one else will take it
			}
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}

// routeCall is route for a call that answers a value: local on this node,
// or the same method of the owner's API.
func routeCall[Req, Resp any](ctx context.Context, e *Engine, ns, workflowID string, req Req,
	local func(*shard) (Resp, error), remote func(api.Peer, context.Context, Req) (Resp, error)) (Resp, error) {
	var resp Resp
	err := e.route(ctx, ns, workflowID, func(s *shard) (err error) {
		resp, err = local(s)
		return err
	}, func(ctx context.Context, p api.Peer) (err error) {
		resp, err = remote(p, ctx, req)
		return err
	})
	return resp, err
}

// ListNodes implements api.Cluster.
func (e *Engine) ListNodes(ctx context.Context, all bool) ([]api.Node, error) {
	var alive time.Time
	if !all {
		alive = store.Now()
	}
	nodes, err := e.store.ListNodes(ctx, alive)
	if nodes == nil && err == nil {
		nodes = []api.Node{} // a list, never null in JSON
	}
	return nodes, err
}

// ListShards implements api.Cluster.
func (e *Engine) ListShards(ctx context.Context) ([]api.ShardInfo, error) {
	out := make([]api.ShardInfo, 0, e.opts.NumShards)
	for id := range int32(e.opts.NumShards) {
		sh, err := e.store.GetShard(ctx, id)
		if err != nil && !errors.Is(err, store.ErrShardNotFound) {
			return nil, err
		}
		info := api.ShardInfo{ID: id, Owner: sh.Owner, RangeID: sh.RangeID}
		if s := e.local(id); s != nil {
			s.mu.Lock()
			info.Serving = s.rangeID == sh.RangeID
			s.mu.Unlock()
		}
		out = append(out, info)
	}
	return out, nil
}

// PutDefinition implements api.Cluster.
func (e *Engine) PutDefinition(ctx context.Context, d api.Definition) (api.Definition, error) {
	if err := store.CheckLimits(&d); err != nil {
		return api.Definition{}, err
	}
	if d.Version == math.MaxInt32 {
		// The store gives version 0 the latest plus one, which must not wrap.
		return api.Definition{}, api.InvalidArgument("version", "at most %d", math.MaxInt32-1)
	}
	if d.Version == 0 && d.Type != "" {
		latest, err := e.store.GetDefinition(ctx, d.Type, 0)
		if err == nil && latest.Version >= math.MaxInt32-1 && latest.SHA1 != d.BodySHA1() {
			return api.Definition{}, fmt.Errorf("%w: definition %s has no version left after %d", api.ErrConflict, d.Type, latest.Version)
		}
	}
	// The store computes the hash and the times; what the caller sent of them is ignored.
	got, err := e.store.PutDefinition(ctx, api.Definition{Type: d.Type, Version: d.Version, Body: d.Body, Group: d.Group, ModifiedBy: d.ModifiedBy})
	if errors.Is(err, store.ErrDefinitionExists) {
		return api.Definition{}, fmt.Errorf("%w: definition %s version %d has other content", api.ErrConflict, d.Type, d.Version)
	}
	return got, err
}

// GetDefinition implements api.Cluster.
func (e *Engine) GetDefinition(ctx context.Context, typ string, version int32) (api.Definition, error) {
	d, err := e.store.GetDefinition(ctx, typ, version)
	if errors.Is(err, store.ErrNotFound) {
		return api.Definition{}, fmt.Errorf("%w: definition %s version %d", api.ErrNotFound, typ, version)
	}
	return d, err
}

// ListDefinitions implements api.Cluster.
func (e *Engine) ListDefinitions(ctx context.Context, typ string) ([]api.Definition, error) {
	all, err := e.store.ListDefinitions(ctx, typ)
	if all == nil && err == nil {
		all = []api.Definition{} // a list, never null in JSON
	}
	return all, err
}
