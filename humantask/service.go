package humantask

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Service implements api.HumanTasks over an api.Service: a list reads the
// tasks' runs, describe is a query, and an action is a signal the service
// waits to see taken. A system worker must run the tasks of the namespace
// (strand server runs one).
type Service struct {
	svc api.Service
	// wait is how long an action waits to be taken (default 10s).
	wait time.Duration
}

// NewService returns the human tasks of svc.
func NewService(svc api.Service) *Service { return &Service{svc: svc, wait: 10 * time.Second} }

var _ api.HumanTasks = (*Service)(nil)

// maxListed bounds the tasks a list reads.
const maxListed = 10000

// ListTasks implements api.HumanTasks.
func (s *Service) ListTasks(ctx context.Context, req api.ListTasksRequest) (api.ListTasksResponse, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.ListTasksResponse{}, err
	}
	lr := api.ListRequest{Namespace: api.NamespaceOrDefault(req.Namespace), WorkflowType: api.HumanTaskWorkflowType, PageSize: 1000,
		Attributes: map[string]string{}}
	switch req.Status {
	case "":
		lr.Statuses = []store.RunStatus{store.StatusRunning}
	case api.TaskOpen, api.TaskClaimed:
		lr.Statuses = []store.RunStatus{store.StatusRunning}
		lr.Attributes[attrStatus] = req.Status
	case "closed":
		lr.Statuses = []store.RunStatus{store.StatusCompleted, store.StatusFailed, store.StatusCanceled, store.StatusTerminated, store.StatusTimedOut}
	default:
		return api.ListTasksResponse{}, api.InvalidArgument("status", "%q; want open, claimed or closed", req.Status)
	}
	if req.Priority != 0 {
		lr.Attributes[attrPriority] = strconv.Itoa(int(priorityOf(req.Priority)))
	}
	if req.ParentWorkflowType != "" {
		lr.Attributes[attrParentType] = req.ParentWorkflowType
	}
	out := api.ListTasksResponse{Tasks: []api.TaskSummary{}}
	now := time.Now()
	for n := 0; n < maxListed; {
		page, err := s.svc.ListWorkflows(ctx, lr)
		if err != nil {
			return api.ListTasksResponse{}, err
		}
		for _, r := range page.Runs {
			n++
			t := summaryOf(r)
			t.Overdue = overdue(t.Status, t.DueAt, now)
			mine := mayClaim(req.TaskCaller, r.Attributes[attrCandidates]) || t.Assignee != "" && t.Assignee == req.User
			if !req.Admin && !mine || req.Mine && !mine {
				continue
			}
			if !req.DueBefore.IsZero() && (t.DueAt.IsZero() || !t.DueAt.Before(req.DueBefore)) {
				continue
			}
			out.Tasks = append(out.Tasks, t)
		}
		if lr.PageToken = page.NextPageToken; len(lr.PageToken) == 0 {
			break
		}
	}
	slices.SortStableFunc(out.Tasks, func(a, b api.TaskSummary) int {
		if c := cmp.Compare(priorityOf(a.Priority), priorityOf(b.Priority)); c != 0 {
			return c
		}
		if a.DueAt.IsZero() != b.DueAt.IsZero() {
			if a.DueAt.IsZero() {
				return 1
			}
			return -1
		}
		if c := a.DueAt.Compare(b.DueAt); c != 0 {
			return c
		}
		return a.Created.Compare(b.Created)
	})
	return out, nil
}

// overdue reports whether a task of status, due at due, is overdue at
// now: still open or claimed, and past its due time.
func overdue(status string, due, now time.Time) bool {
	return (status == api.TaskOpen || status == api.TaskClaimed) && !due.IsZero() && !now.Before(due)
}

// answer is the task as an answer gives it: with whether it is overdue now.
func answer(t api.HumanTask) api.HumanTask {
	t.Overdue = t.Outcome == nil && overdue(t.Status, t.DueAt, time.Now())
	return t
}

// summaryOf is a task's run as lists show it.
func summaryOf(r store.VisibilityRecord) api.TaskSummary {
	a := r.Attributes
	p, _ := strconv.Atoi(a[attrPriority])
	t := api.TaskSummary{TaskID: r.WorkflowID, Title: a[attrTitle], Status: a[attrStatus], Assignee: a[attrAssignee],
		Candidates: parseCandidates(a[attrCandidates]), Priority: int8(p), Created: r.StartTime, ParentWorkflowType: a[attrParentType],
		Parent: api.RunRef{Namespace: r.Namespace, WorkflowID: a[attrParent]}}
	if r.Status != store.StatusRunning {
		t.Status = api.TaskCompleted
		if r.Status != store.StatusCompleted {
			t.Status = api.TaskCanceled
		}
	}
	if due, err := time.Parse(time.RFC3339, a[attrDue]); err == nil {
		t.DueAt = due
	}
	return t
}

func parseCandidates(s string) api.TaskCandidates {
	var c api.TaskCandidates
	for _, f := range strings.Fields(s) {
		if u, ok := strings.CutPrefix(f, "u:"); ok {
			c.Users = append(c.Users, u)
		} else if g, ok := strings.CutPrefix(f, "g:"); ok {
			c.Groups = append(c.Groups, g)
		}
	}
	return c
}

// mayClaim reports whether the caller is among the candidates (as their
// attribute holds them).
func mayClaim(c api.TaskCaller, candidates string) bool {
	if c.User != "" && strings.Contains(candidates, " u:"+c.User+" ") {
		return true
	}
	return slices.ContainsFunc(c.Groups, func(g string) bool { return strings.Contains(candidates, " g:"+g+" ") })
}

// visibleTo reports whether the caller may see the task.
func visibleTo(c api.TaskCaller, t api.HumanTask) bool {
	return c.Admin || t.Assignee != "" && t.Assignee == c.User || mayClaim(c, candidatesText(t.Candidates)) ||
		slices.ContainsFunc(t.Actions, func(a api.TaskAction) bool { return a.By == c.User && c.User != "" })
}

// DescribeTask implements api.HumanTasks: a task the caller may not see is
// not found.
func (s *Service) DescribeTask(ctx context.Context, req api.DescribeTaskRequest) (api.HumanTask, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.HumanTask{}, err
	}
	d, err := s.describe(ctx, req.TaskRef)
	if err != nil {
		return api.HumanTask{}, err
	}
	if !visibleTo(req.TaskCaller, d.HumanTask) {
		return api.HumanTask{}, notFound(req.TaskRef)
	}
	return answer(d.HumanTask), nil
}

func notFound(ref api.TaskRef) error {
	return fmt.Errorf("%w: no task %q", api.ErrNotFound, ref.TaskID)
}

// describe asks the task's run.
func (s *Service) describe(ctx context.Context, ref api.TaskRef) (describe, error) {
	if !strings.HasPrefix(ref.TaskID, api.HumanTaskIDPrefix) {
		return describe{}, notFound(ref)
	}
	raw, err := s.svc.QueryWorkflow(ctx, api.QueryRequest{RunRef: api.RunRef{Namespace: api.NamespaceOrDefault(ref.Namespace), WorkflowID: ref.TaskID}, Name: queryName})
	if errors.Is(err, api.ErrNotFound) {
		return describe{}, notFound(ref)
	}
	if err != nil {
		return describe{}, err
	}
	var d describe
	if err := json.Unmarshal(raw, &d); err != nil {
		return describe{}, fmt.Errorf("humantask: decode task %s: %w", ref.TaskID, err)
	}
	return d, nil
}

// ActOnTask implements api.HumanTasks: it checks the action as the task
// will (a clear error, and nothing sent, when it may not be taken), sends
// it, and returns the task once the task took it.
func (s *Service) ActOnTask(ctx context.Context, req api.TaskActionRequest) (api.HumanTask, error) {
	if err := store.CheckLimits(&req); err != nil {
		return api.HumanTask{}, err
	}
	if req.User == "" {
		return api.HumanTask{}, api.InvalidArgument("user", "empty: name who acts")
	}
	d, err := s.describe(ctx, req.TaskRef)
	if err != nil {
		return api.HumanTask{}, err
	}
	t := d.HumanTask
	if !visibleTo(req.TaskCaller, t) {
		return api.HumanTask{}, notFound(req.TaskRef)
	}
	if t.Outcome != nil {
		return api.HumanTask{}, fmt.Errorf("%w: the task is %s", api.ErrFailedPrecondition, t.Status)
	}
	if req.Action == api.TaskActionClaim && !req.Admin && !mayClaim(req.TaskCaller, candidatesText(t.Candidates)) {
		return api.HumanTask{}, fmt.Errorf("%w: %s is not among the task's candidates", api.ErrPermissionDenied, req.User)
	}
	c := command{ID: uuid.NewString(), Kind: req.Action, By: req.User, Admin: req.Admin, To: req.To, Text: req.Text, Data: req.Data, Result: req.Outcome}
	if c.Kind == api.TaskActionComplete && c.Result == "" && len(t.Options.Outcomes) == 1 {
		c.Result = t.Options.Outcomes[0]
	}
	if why := (&task{t: t}).refusal(c); why != "" {
		return api.HumanTask{}, refused(c, why)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return api.HumanTask{}, err
	}
	ref := api.RunRef{Namespace: api.NamespaceOrDefault(req.Namespace), WorkflowID: req.TaskID}
	if err := s.svc.SignalWorkflow(ctx, api.SignalRequest{RunRef: ref, Name: signalName, Input: raw, RequestID: c.ID, Identity: req.User}); err != nil {
		return api.HumanTask{}, err
	}
	deadline := time.Now().Add(s.wait)
	for {
		d, err := s.describe(ctx, req.TaskRef)
		if err != nil {
			return api.HumanTask{}, err
		}
		if why, ok := d.Applied[c.ID]; ok {
			if why != "" {
				return api.HumanTask{}, refused(c, why)
			}
			return answer(d.HumanTask), nil
		}
		if time.Now().After(deadline) {
			return answer(d.HumanTask), nil // sent, and durable: it is taken later
		}
		select {
		case <-ctx.Done():
			return api.HumanTask{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// refused is the error of an action the task does not take.
func refused(c command, why string) error {
	switch {
	case c.Kind == api.TaskActionComplete && strings.HasPrefix(why, "outcome"):
		return api.InvalidArgument("outcome", "%s", why)
	case c.Kind == api.TaskActionComplete && strings.HasPrefix(why, "the data"):
		return api.InvalidArgument("data", "%s", why)
	case strings.HasPrefix(why, "only") || strings.HasPrefix(why, "claim the task"):
		return fmt.Errorf("%w: %s", api.ErrPermissionDenied, why)
	case strings.HasPrefix(why, "no such action") || strings.HasPrefix(why, "an empty") || strings.HasPrefix(why, "delegate to whom"):
		return api.InvalidArgument("action", "%s", why)
	}
	return fmt.Errorf("%w: %s", api.ErrConflict, why)
}
