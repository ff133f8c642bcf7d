package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Calls between nodes. Most are the public API, forwarded to the node that
// serves a shard (route, in cluster.go). The peering calls below are the
// rest: a child started and a parent told of its child's close on the
// node that serves them, and the polls that share task queues across
// nodes.
//
// Task queues: a node's queues hold the tasks of its own shards. While
// workers wait on a node for a queue, the node keeps one forwarded poll
// (a leg) open on each other node for that queue; a task a leg brings back
// was started on its owner and goes to a waiting worker here. So a worker
// connected to any node takes any task of its queue, and a node's own
// workers are served from its own queue without a hop: a task goes to a
// leg only when none of them waits, and while they are taking the queue's
// tasks (one polled within the matcher's hold, DefaultLegHold) not before
// the hold is over.

// Peering ops.
const (
	opPoll         = "poll"
	opStart        = "start"
	opNotifyParent = "notify-parent"
	opRelease      = "release"
)

// legWait is how long a leg's forwarded poll waits on the other node.
const legWait = 10 * time.Second

var _ api.Peering = (*Engine)(nil)

// pollCall is a leg's forwarded poll.
type pollCall struct {
	Kind      string        `json:"kind"` // "workflow" or "step"
	Node      string        `json:"node"` // the node whose workers wait
	Namespace string        `json:"namespace"`
	Queue     string        `json:"queue"`
	Wait      time.Duration `json:"wait"`
	// Steps are the step names the waiting workers run (empty: all).
	Steps []string `json:"steps,omitempty"`
}

// released is a task a leg brought back when no worker waited for it any
// more: its owner offers it again.
type released struct {
	Kind  string `json:"kind"` // "workflow" or "step"
	Token []byte `json:"token"`
}

// parentNotice is a child's close on its way to the parent's node.
type parentNotice struct {
	Child store.RunKey `json:"child"`
	Data  *taskData    `json:"data"`
}

// peerCall makes a peering call, marked forwarded.
func peerCall(ctx context.Context, p api.Peer, op string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("engine: encode %s call: %w", op, err)
	}
	raw, err := p.PeerCall(api.WithForwarded(ctx), op, b)
	if err != nil || out == nil || len(raw) == 0 {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("engine: decode %s answer: %w", op, err)
	}
	return nil
}

// PeerCall implements api.Peering: the calls other nodes make.
func (e *Engine) PeerCall(ctx context.Context, op string, in json.RawMessage) (json.RawMessage, error) {
	ctx = api.WithForwarded(ctx)
	var out any
	var err error
	switch op {
	case opPoll:
		var q pollCall
		if err := json.Unmarshal(in, &q); err != nil {
			return nil, api.InvalidArgument("body", "%v", err)
		}
		if q.Wait <= 0 {
			return nil, api.InvalidArgument("wait", "want a positive duration, got %v", q.Wait)
		}
		ctx, cancel := context.WithTimeout(ctx, min(q.Wait, time.Minute))
		defer cancel()
		req := api.PollRequest{Namespace: q.Namespace, Queue: q.Queue, Identity: "a worker of node " + q.Node, Steps: q.Steps}
		switch q.Kind {
		case api.QueueKindWorkflow:
			out, err = e.pollWorkflowTask(ctx, req, false)
		case api.QueueKindStep:
			out, err = e.pollStepTask(ctx, req, false)
		default:
			return nil, api.InvalidArgument("kind", "want workflow or step, got %q", q.Kind)
		}
	case opStart:
		var spec startSpec
		if err := json.Unmarshal(in, &spec); err != nil {
			return nil, api.InvalidArgument("body", "%v", err)
		}
		out, err = e.start(ctx, &spec)
	case opRelease:
		var rel released
		if err := json.Unmarshal(in, &rel); err != nil {
			return nil, api.InvalidArgument("body", "%v", err)
		}
		err = e.release(ctx, rel)
		out = struct{}{}
	case opNotifyParent:
		var n parentNotice
		if err := json.Unmarshal(in, &n); err != nil || n.Data == nil || n.Data.Target == nil {
			return nil, api.InvalidArgument("body", "want a child and its task data with a target (%v)", err)
		}
		err = e.notifyParent(ctx, n.Child, n.Data)
		out = struct{}{}
	case opReset:
		out, err = e.peerReset(ctx, in)
	case opPause, opResume:
		err = e.peerPause(ctx, in, op == opPause)
		out = struct{}{}
	case opQueues, opOverview:
		var m monitorCall
		if err := json.Unmarshal(in, &m); err != nil {
			return nil, api.InvalidArgument("body", "%v", err)
		}
		if op == opQueues {
			out, err = e.ListQueues(ctx, m.Namespace)
		} else {
			out, err = e.Overview(ctx, m.Namespace)
		}
	default:
		return nil, api.InvalidArgument("op", "unknown peering call %q", op)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// legKey names a leg: a queue and the node it polls.
type legKey struct {
	q    queueKey
	node string
}

// maxLegs bounds the legs of one queue to one node.
const maxLegs = 4

// wantLegs makes sure legs poll every other live node for queue k, as many
// as workers wait here, up to maxLegs per node.
func (e *Engine) wantLegs(k queueKey) {
	v := e.cluster.view.Load()
	if v == nil || !e.clustered() {
		return
	}
	want := min(e.match.workersWaiting(k), maxLegs)
	c := &e.cluster
	c.legMu.Lock()
	defer c.legMu.Unlock()
	if c.closing {
		return // Close waits for the legs that started before
	}
	for _, n := range v.nodes {
		addr := v.addr[n]
		lk := legKey{q: k, node: n}
		if n == e.opts.Identity || addr == "" || c.legs[lk] >= want {
			continue
		}
		c.legs[lk]++
		e.wg.Go(func() { e.leg(lk, addr) })
	}
}

// leg polls node lk.node for queue lk.q while workers wait here, and hands
// what it gets to them. It ends when none waits, the node leaves or the
// engine closes.
func (e *Engine) leg(lk legKey, addr string) {
	p := e.peer(addr)
	call := pollCall{Kind: lk.q.kind.String(), Node: e.opts.Identity, Namespace: lk.q.ns, Queue: lk.q.name, Wait: legWait}
	for {
		c := &e.cluster
		c.legMu.Lock()
		v := c.view.Load()
		if e.ctx.Err() != nil || c.legs[lk] > min(e.match.workersWaiting(lk.q), maxLegs) || v.addr[lk.node] != addr {
			if c.legs[lk]--; c.legs[lk] == 0 {
				delete(c.legs, lk)
			}
			c.legMu.Unlock()
			return
		}
		c.legMu.Unlock()
		if lk.q.kind == stepQueue {
			call.Steps = e.match.served(lk.q)
		}
		var raw json.RawMessage
		// Bounded: a node that stopped answering (paused, cut off) must not
		// hold the leg.
		ctx, cancel := context.WithTimeout(e.ctx, legWait+5*time.Second)
		err := peerCall(ctx, p, opPoll, call, &raw)
		cancel()
		if err != nil {
			select {
			case <-e.ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue // nothing within the wait
		}
		var item any = &api.WorkflowTask{}
		if lk.q.kind == stepQueue {
			item = &api.StepTask{}
		}
		if err := json.Unmarshal(raw, item); err != nil {
			// Started on its owner but unreadable here: its timeout there
			// offers it again.
			e.log.Error("undecodable task from another node", "node", lk.node, "err", err)
			continue
		}
		idle := !e.match.runsItem(lk.q, item)
		e.match.requeue(lk.q, api.PriorityHighest, item)
		if idle {
			// No worker that runs it waits (they are busy, or gone): if
			// none takes it soon, it goes back to its owner rather than
			// wait out its timeout here.
			e.wg.Go(func() { e.releaseUntaken(lk.q, p, item) })
		}
	}
}

// releaseAfter is how long a task a leg brought may wait here for a worker
// before it goes back to its owner.
const releaseAfter = 2 * time.Second

// releaseUntaken gives item back to its owner p if no worker here has
// taken it within releaseAfter.
func (e *Engine) releaseUntaken(k queueKey, p api.Peer, item any) {
	select {
	case <-e.ctx.Done():
		return
	case <-time.After(releaseAfter):
	}
	if !e.match.remove(k, item) {
		return // taken
	}
	rel, _ := releasedOf(item)
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if err := peerCall(ctx, p, opRelease, rel, nil); err != nil {
		e.match.requeue(k, api.PriorityHighest, item) // keep it for the next worker
	}
}

// releasedOf describes a started task for its owner, and names its run.
func releasedOf(item any) (released, store.RunKey) {
	if st, ok := item.(*api.StepTask); ok {
		return released{Kind: stepQueue.String(), Token: st.Token}, st.Run
	}
	wt := item.(*api.WorkflowTask)
	return released{Kind: workflowQueue.String(), Token: wt.Token}, wt.Run
}

// giveBackBorrowed returns to their owners the started tasks of other
// nodes' shards that legs brought and no worker took (Close).
func (e *Engine) giveBackBorrowed(ctx context.Context) {
	for _, item := range e.match.takeStarted() {
		rel, k := releasedOf(item)
		_, p := e.ownerPeer(e.shardID(k.Namespace, k.WorkflowID))
		if p == nil {
			continue // this node's own shard: its next owner offers it again
		}
		if err := peerCall(ctx, p, opRelease, rel, nil); err != nil {
			e.log.Warn("give a task back to its node", "run", k.String(), "err", err)
		}
	}
}

// release takes back a task this node started for another node's leg: the
// workflow task or step attempt is offered again, as if its worker had timed
// out at once. A task already completed, or of a shard that moved, is left
// alone.
func (e *Engine) release(ctx context.Context, rel released) error {
	switch rel.Kind {
	case api.QueueKindWorkflow:
		var tok wtToken
		if err := decodeToken(rel.Token, &tok); err != nil {
			return err
		}
		if tok.Query != "" {
			// Offered again while its caller waits; a withdrawn one is gone.
			e.queryMu.Lock()
			if p := e.queries[tok.Query]; p != nil {
				p.taken.Store(false)
				e.match.offerQuery(p.q, p)
			}
			e.queryMu.Unlock()
			return nil
		}
		if s := e.local(e.shardID(tok.Run.Namespace, tok.Run.WorkflowID)); s != nil {
			s.onRun(ctx, tok.Run, func(r *run) {
				if f := r.flight; f != nil && f.nonce == tok.Nonce {
					r.takeBack(ctx)
				}
			})
		}
	case api.QueueKindStep:
		var tok stepToken
		if err := decodeToken(rel.Token, &tok); err != nil {
			return err
		}
		if s := e.local(e.shardID(tok.Run.Namespace, tok.Run.WorkflowID)); s != nil {
			s.onRun(ctx, tok.Run, func(r *run) {
				sr := r.steps[tok.Seq]
				info, ok := r.exec.Steps[tok.Seq]
				if sr == nil || sr.nonce != tok.Nonce || !ok {
					return
				}
				sr.stop()
				delete(r.steps, tok.Seq)
				q := queueKey{ns: r.key.Namespace, name: queueOrDefault(info.Queue), kind: stepQueue}
				e.match.requeue(q, info.Priority, sr.item)
			})
		}
	default:
		return api.InvalidArgument("kind", "want workflow or step, got %q", rel.Kind)
	}
	return nil
}
