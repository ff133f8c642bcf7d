package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Exchange is a worker's reports of the tasks it finished and its wish for
// new ones, in one call (POST /api/v1/namespaces/{namespace}/task-exchange):
// what a busy worker
// sends instead of a poll and a report per task. The reports are applied
// together (so they share the store's commits), then the takes are filled
// with the tasks that are ready, the tasks those reports made included (a
// step the completed workflow task scheduled comes back at once). With
// nothing to report and no task ready, Wait holds the call open until the
// first task comes, as a poll does.
//
// The calls of the plain API (a poll, a complete, a fail per task) stay:
// Exchange only puts many of them in one request.
type Exchange struct {
	CompleteWorkflowTasks []api.CompleteWorkflowTaskRequest `json:"complete_workflow_tasks,omitempty" max:"1000"`
	FailWorkflowTasks     []api.FailWorkflowTaskRequest     `json:"fail_workflow_tasks,omitempty" max:"1000"`
	CompleteSteps         []api.CompleteStepRequest         `json:"complete_steps,omitempty" max:"1000"`
	FailSteps             []api.FailStepRequest             `json:"fail_steps,omitempty" max:"1000"`
	// Takes are the tasks the worker takes now, by poll.
	Takes []Take `json:"takes,omitempty" max:"100"`
	// Wait, with nothing reported and no task ready, waits for the first
	// task up to the server's poll wait.
	Wait bool `json:"wait,omitempty"`
}

// Task kinds a Take names.
const (
	TakeWorkflowTasks = "workflow"
	TakeSteps         = "step"
)

// Take asks for up to Max tasks of a kind (workflow tasks or step tasks),
// polled as Poll says (its queue, identity and steps; its namespace is the
// exchange's, and its no_wait the exchange's to decide).
type Take struct {
	Kind string          `json:"kind" enum:"workflow,step" required:"true"`
	Poll api.PollRequest `json:"poll"`
	Max  int32           `json:"max" minimum:"1" maximum:"1000" required:"true"`
}

// ExchangeAnswer answers an Exchange: an outcome per report, in the order
// of the request's lists, and the tasks taken, one Taken per Take.
type ExchangeAnswer struct {
	CompleteWorkflowTasks []Outcome `json:"complete_workflow_tasks,omitempty"`
	FailWorkflowTasks     []Outcome `json:"fail_workflow_tasks,omitempty"`
	CompleteSteps         []Outcome `json:"complete_steps,omitempty"`
	FailSteps             []Outcome `json:"fail_steps,omitempty"`
	Taken                 []Taken   `json:"taken,omitempty"`
}

// Outcome is what became of one report: done, or the error the report's
// own call would have answered.
type Outcome struct {
	// LastEventID is a completed workflow task's (see
	// api.CompleteWorkflowTaskResponse).
	LastEventID int64  `json:"last_event_id,omitempty"`
	Error       *Error `json:"error,omitempty"`
}

// Err is the outcome's error as the report's own call returns it (nil:
// done).
func (o Outcome) Err() error {
	if o.Error == nil {
		return nil
	}
	return o.Error.Err()
}

// Taken are the tasks one Take got.
type Taken struct {
	WorkflowTasks []*api.WorkflowTask `json:"workflow_tasks,omitempty"`
	StepTasks     []*api.StepTask     `json:"step_tasks,omitempty"`
}

// check refuses an exchange that is not well formed, as its plain calls
// would be refused: a take of no known kind or count, a report without its
// token or its failure. (A report whose token names no open task is
// answered in its outcome.)
func (x *Exchange) check() error {
	if err := store.CheckLimits(x); err != nil {
		return err
	}
	for i, t := range x.Takes {
		if t.Kind != TakeWorkflowTasks && t.Kind != TakeSteps {
			return api.InvalidArgument(fmt.Sprintf("takes[%d].kind", i), "%q: want workflow or step", t.Kind)
		}
		if t.Max < 1 || t.Max > 1000 {
			return api.InvalidArgument(fmt.Sprintf("takes[%d].max", i), "%d: want 1 to 1000", t.Max)
		}
	}
	for i, r := range x.CompleteWorkflowTasks {
		if len(r.Token) == 0 {
			return api.InvalidArgument(fmt.Sprintf("complete_workflow_tasks[%d].token", i), "empty")
		}
	}
	for i, r := range x.FailWorkflowTasks {
		if err := checkFailReport("fail_workflow_tasks", i, r.Token, r.Failure != nil); err != nil {
			return err
		}
	}
	for i, r := range x.CompleteSteps {
		if len(r.Token) == 0 {
			return api.InvalidArgument(fmt.Sprintf("complete_steps[%d].token", i), "empty")
		}
	}
	for i, r := range x.FailSteps {
		if err := checkFailReport("fail_steps", i, r.Token, r.Failure != nil); err != nil {
			return err
		}
	}
	return nil
}

// checkFailReport checks the i-th report of the list named list: a failure
// report needs its task's token and the failure.
func checkFailReport(list string, i int, token []byte, hasFailure bool) error {
	if len(token) == 0 {
		return api.InvalidArgument(fmt.Sprintf("%s[%d].token", list, i), "empty")
	}
	if !hasFailure {
		return api.InvalidArgument(fmt.Sprintf("%s[%d].failure", list, i), "missing")
	}
	return nil
}

func outcome(err error) Outcome {
	if err == nil {
		return Outcome{}
	}
	_, body := errorOf(err)
	return Outcome{Error: &body}
}

// exchange serves an Exchange in namespace ns: the takes poll its queues;
// a report may name a task of another namespace the caller works in.
func (h *handler) exchange(ctx context.Context, ns string, req Exchange) (ExchangeAnswer, error) {
	if err := store.CheckLimits(&api.PollRequest{Namespace: ns}); err != nil {
		return ExchangeAnswer{}, err // the path's namespace, as a poll checks it
	}
	if err := req.check(); err != nil {
		return ExchangeAnswer{}, err
	}
	for i := range req.Takes {
		req.Takes[i].Poll.Namespace = ns
	}
	var out ExchangeAnswer
	// The reports, at once: those of one shard share its next commit.
	var wg sync.WaitGroup
	out.CompleteWorkflowTasks = report(ctx, h, &wg, req.CompleteWorkflowTasks, func(r api.CompleteWorkflowTaskRequest) []byte { return r.Token },
		func(ctx context.Context, r api.CompleteWorkflowTaskRequest) (Outcome, error) {
			resp, err := h.svc.CompleteWorkflowTask(ctx, r)
			return Outcome{LastEventID: resp.LastEventID}, err
		})
	out.FailWorkflowTasks = report(ctx, h, &wg, req.FailWorkflowTasks, func(r api.FailWorkflowTaskRequest) []byte { return r.Token },
		func(ctx context.Context, r api.FailWorkflowTaskRequest) (Outcome, error) {
			return Outcome{}, h.svc.FailWorkflowTask(ctx, r)
		})
	out.CompleteSteps = report(ctx, h, &wg, req.CompleteSteps, func(r api.CompleteStepRequest) []byte { return r.Token },
		func(ctx context.Context, r api.CompleteStepRequest) (Outcome, error) {
			return Outcome{}, h.svc.CompleteStep(ctx, r)
		})
	out.FailSteps = report(ctx, h, &wg, req.FailSteps, func(r api.FailStepRequest) []byte { return r.Token },
		func(ctx context.Context, r api.FailStepRequest) (Outcome, error) {
			return Outcome{}, h.svc.FailStep(ctx, r)
		})
	wg.Wait()
	if len(req.Takes) == 0 {
		return out, nil
	}

	// The tasks that are ready.
	out.Taken = make([]Taken, len(req.Takes))
	got, err := h.takeReady(ctx, req.Takes, out.Taken)
	if err != nil || got > 0 || !req.Wait ||
		len(req.CompleteWorkflowTasks)+len(req.FailWorkflowTasks)+len(req.CompleteSteps)+len(req.FailSteps) > 0 {
		return out, err
	}
	// None: wait for the first, on every take at once, then fill up.
	if h.polls != nil && !h.polls.Allow() {
		return ExchangeAnswer{}, errTooManyPolls
	}
	wctx, cancel := h.longPoll(ctx, h.opts.PollWait)
	defer cancel()
	first, firstCancel := context.WithCancel(wctx)
	defer firstCancel()
	var mu sync.Mutex
	var errs []error
	var waits sync.WaitGroup
	for i, t := range req.Takes {
		waits.Go(func() {
			p := t.Poll
			p.NoWait = false
			var got Taken
			found, err := h.takeOne(first, t.Kind, p, &got)
			mu.Lock()
			out.Taken[i].WorkflowTasks = append(out.Taken[i].WorkflowTasks, got.WorkflowTasks...)
			out.Taken[i].StepTasks = append(out.Taken[i].StepTasks, got.StepTasks...)
			if err != nil && first.Err() == nil {
				errs = append(errs, err)
			}
			mu.Unlock()
			if found || err != nil {
				firstCancel() // the others stop waiting; what they hold goes back to the queue
			}
		})
	}
	waits.Wait()
	if len(errs) > 0 {
		return out, errors.Join(errs...)
	}
	_, err = h.takeReady(ctx, req.Takes, out.Taken)
	return out, err
}

// report applies the reports of one kind, each in a goroutine of wg, and
// returns their outcomes, filled once wg is done. A report whose token
// names a namespace the caller may not work in is refused alone.
func report[R any](ctx context.Context, h *handler, wg *sync.WaitGroup, reports []R, token func(R) []byte, apply func(context.Context, R) (Outcome, error)) []Outcome {
	if len(reports) == 0 {
		return nil
	}
	out := make([]Outcome, len(reports))
	for i, r := range reports {
		wg.Go(func() {
			if err := h.allowTask(ctx, token(r)); err != nil {
				out[i] = outcome(err)
				return
			}
			o, err := apply(ctx, r)
			if err != nil {
				o = outcome(err)
			}
			out[i] = o
		})
	}
	return out
}

// takeReady fills each take, up to its Max counting what it holds, with
// the tasks ready now, and says how many it took.
func (h *handler) takeReady(ctx context.Context, takes []Take, taken []Taken) (int, error) {
	n := 0
	for i, t := range takes {
		p := t.Poll
		p.NoWait = true
		for int32(len(taken[i].WorkflowTasks)+len(taken[i].StepTasks)) < t.Max {
			found, err := h.takeOne(ctx, t.Kind, p, &taken[i])
			if err != nil && n == 0 {
				return n, err
			}
			if !found || err != nil {
				break
			}
			n++
		}
	}
	return n, nil
}

// takeOne polls one task of kind into taken, and says whether it got one.
func (h *handler) takeOne(ctx context.Context, kind string, p api.PollRequest, taken *Taken) (bool, error) {
	switch kind {
	case TakeWorkflowTasks:
		wt, err := h.svc.PollWorkflowTask(ctx, p)
		if wt != nil {
			taken.WorkflowTasks = append(taken.WorkflowTasks, wt)
		}
		return wt != nil, err
	default:
		st, err := h.svc.PollStepTask(ctx, p)
		if st != nil {
			taken.StepTasks = append(taken.StepTasks, st)
		}
		return st != nil, err
	}
}

// exchangeRoute is the route of Exchange.
func exchangeRoute(h *handler) Route {
	return Route{"POST", prefix + "/namespaces/{namespace}/task-exchange", "Report finished tasks and take new ones in one call (what a busy worker sends instead of a poll and a report per task)",
		call(h, func(ctx context.Context, r *http.Request, req Exchange) (ExchangeAnswer, error) {
			return h.exchange(ctx, r.PathValue("namespace"), req)
		})}
}
