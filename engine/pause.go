package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Pausing a run: while exec.Paused is set, the run's workflow task stays
// pending but is not offered (dispatchWT, claim and the eager path check),
// and a step attempt that comes up to be offered or started is held in
// memory (run.paused) instead; the run is not evicted while it holds one.
// Everything else goes on: running steps finish and their results are
// recorded, timers fire, signals arrive; it all waits for the workflow
// task. Resume offers the held attempts and the workflow task. After a
// restart or a takeover the run's transfer tasks come back from the store
// and are held again.

// Peering calls of pause and resume.
const (
	opPause  = "pause"
	opResume = "resume"
)

var _ api.Operator = (*Engine)(nil)

// PauseWorkflow implements api.Operator.
func (e *Engine) PauseWorkflow(ctx context.Context, req api.PauseRequest) error {
	return e.setPaused(ctx, req, true)
}

// ResumeWorkflow implements api.Operator.
func (e *Engine) ResumeWorkflow(ctx context.Context, req api.PauseRequest) error {
	return e.setPaused(ctx, req, false)
}

func (e *Engine) setPaused(ctx context.Context, req api.PauseRequest, pause bool) error {
	if err := store.CheckLimits(&req); err != nil {
		return err
	}
	if req.WorkflowID == "" {
		return api.InvalidArgument("workflow_id", "empty")
	}
	if err := e.checkRef(ctx, req.RunRef); err != nil {
		return err
	}
	op := opResume
	if pause {
		op = opPause
	}
	return e.route(ctx, req.Namespace, req.WorkflowID, func(s *shard) error {
		return e.setPausedOn(ctx, s, req, pause)
	}, func(ctx context.Context, p api.Peer) error {
		return peerCall(ctx, p, op, req, nil)
	})
}

// peerPause serves a pause or resume another node forwarded.
func (e *Engine) peerPause(ctx context.Context, in json.RawMessage, pause bool) error {
	var req api.PauseRequest
	if err := json.Unmarshal(in, &req); err != nil {
		return api.InvalidArgument("body", "%v", err)
	}
	return e.setPaused(ctx, req, pause)
}

func (e *Engine) setPausedOn(ctx context.Context, s *shard, req api.PauseRequest, pause bool) error {
	k, err := s.currentRunID(ctx, req.RunRef)
	if err != nil {
		return err
	}
	return s.withRun(ctx, k, func(r *run) error {
		t, err := r.tx(ctx)
		if err != nil {
			return err
		}
		x := t.exec
		if x.State == store.StateClosed {
			return fmt.Errorf("%w: %s", api.ErrRunClosed, r.key)
		}
		if (x.Paused != nil) == pause {
			return nil // paused (or running) already: nothing to record
		}
		if pause {
			x.Paused = &store.PauseInfo{Identity: req.Identity, Time: t.now, Reason: req.Reason}
			t.event(api.Event{Type: api.EventWorkflowPaused, Reason: req.Reason, Identity: req.Identity})
			return r.commit(ctx, t)
		}
		x.Paused = nil
		t.event(api.Event{Type: api.EventWorkflowResumed, Reason: req.Reason, Identity: req.Identity})
		if err := r.commit(ctx, t); err != nil {
			return err
		}
		r.release()
		return nil
	})
}

// isPaused reports whether the run is held paused.
func (r *run) isPaused() bool { return r.exec != nil && r.exec.Paused != nil }

// hold keeps a step attempt that came up while the run is paused.
func (r *run) hold(it *stepItem) {
	if r.paused == nil {
		r.paused = map[int64]*stepItem{}
	}
	r.paused[it.seq] = it
}

// release offers what the run held while it was paused: its step attempts
// that are still current, and its workflow task.
func (r *run) release() {
	for seq, it := range r.paused {
		delete(r.paused, seq)
		info, ok := currentAttempt(r.exec, seq, it.attempt)
		if !ok {
			continue
		}
		if sr := r.steps[seq]; sr != nil && sr.attempt == it.attempt {
			continue
		}
		r.s.e.match.offer(queueKey{ns: r.key.Namespace, name: queueOrDefault(info.Queue), kind: stepQueue}, info.Priority, it)
	}
	r.dispatchWT()
}
