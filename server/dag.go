package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/store"
)

// DAGText is a definition's text (YAML or JSON) to check or apply.
type DAGText struct {
	Text string `json:"text" max:"16777216" required:"true"`
	// Offline keeps a definition applied for the first time offline.
	Offline  bool   `json:"offline,omitempty"`
	Identity string `json:"identity,omitempty" max:"256"`
	// Namespace is where apply looks for workers of the tasks' worker
	// groups, to warn of a group none polls (default: default).
	Namespace string `json:"namespace,omitempty" max:"63"`
}

// DAGCheck is what a check found: no problems, or each with its line and
// column.
type DAGCheck struct {
	Valid    bool          `json:"valid"`
	Problems []dag.Problem `json:"problems,omitempty"`
	// Definition is the parsed definition of a valid text.
	Definition *dag.Definition `json:"definition,omitempty"`
}

// DAGApplied is what applying a definition did.
type DAGApplied struct {
	Name    string      `json:"name"`
	Version int32       `json:"version"`
	SHA1    string      `json:"sha1"`
	Changed bool        `json:"changed"`
	Release dag.Release `json:"release"`
	// Warnings are what did not stop the apply but may fail a run: a
	// sub_process or a dependent naming a DAG that does not exist (yet),
	// a worker group no worker of the namespace polls, each with its line
	// and column.
	Warnings []dag.Problem `json:"warnings,omitempty"`
}

// DAGList is the DAGs.
type DAGList struct {
	DAGs []dag.Summary `json:"dags"`
}

// DAGVersion is a version of a DAG: its stored text and the graph parsed
// from it.
type DAGVersion struct {
	Release    dag.Release     `json:"release"`
	Stored     api.Definition  `json:"stored"`
	Definition *dag.Definition `json:"definition,omitempty"`
}

// DAGVersionList is a DAG's versions, oldest first.
type DAGVersionList struct {
	Versions []api.Definition `json:"versions"`
}

// DAGRelease changes a DAG's release: online or offline, and the current
// version (0: unchanged).
type DAGRelease struct {
	Online   *bool  `json:"online,omitempty"`
	Current  int32  `json:"current,omitempty" minimum:"0" maximum:"2147483646"`
	Identity string `json:"identity,omitempty" max:"256"`
}

// DAGRun starts an instance.
type DAGRun struct {
	// ID is the instance's workflow id (default NAME-TIME-RANDOM).
	ID              string              `json:"id,omitempty" max:"250" id:"true"`
	Version         int32               `json:"version,omitempty" minimum:"0" maximum:"2147483646"`
	Params          map[string]string   `json:"params,omitempty" max:"256" maxkey:"128" maxvalue:"65536"`
	FailureStrategy dag.FailureStrategy `json:"failure_strategy,omitempty"`
	WorkerGroup     string              `json:"worker_group,omitempty" max:"100"`
	StartFrom       []string            `json:"start_from,omitempty" max:"1000" maxvalue:"100"`
	ScheduleTime    time.Time           `json:"schedule_time,omitzero"`
	Identity        string              `json:"identity,omitempty" max:"256"`
}

// DAGBackfill starts a backfill of a DAG (complement data): an instance
// for each business date of a range (from, to) or a list (dates).
type DAGBackfill struct {
	From  string   `json:"from,omitempty" max:"10" example:"2026-01-01"`
	To    string   `json:"to,omitempty" max:"10" example:"2026-01-04"`
	Dates []string `json:"dates,omitempty" max:"1000" maxvalue:"10"`
	// At is the time of day of the business times, HH:MM (default 00:00).
	At       string `json:"at,omitempty" max:"5"`
	TimeZone string `json:"time_zone,omitempty" max:"100"`
	// Parallelism: 0 or 1, one date after another, stopping at a failure;
	// more, that many dates at once.
	Parallelism int `json:"parallelism,omitempty" minimum:"0" maximum:"100"`
	// Dependents also runs the DAGs whose dependent tasks name this one.
	Dependents      bool                `json:"dependents,omitempty"`
	Version         int32               `json:"version,omitempty" minimum:"0" maximum:"2147483646"`
	Params          map[string]string   `json:"params,omitempty" max:"256" maxkey:"128" maxvalue:"65536"`
	FailureStrategy dag.FailureStrategy `json:"failure_strategy,omitempty"`
	WorkerGroup     string              `json:"worker_group,omitempty" max:"100"`
	Priority        string              `json:"priority,omitempty" max:"10"`
	// ID is the backfill's workflow id (default NAME-backfill-TIME-RANDOM).
	ID       string `json:"id,omitempty" max:"140" id:"true"`
	Identity string `json:"identity,omitempty" max:"256"`
}

// DAGInstance is an instance's run and what it did.
type DAGInstance struct {
	Run      store.VisibilityRecord `json:"run"`
	Instance *dag.Instance          `json:"instance"`
}

// DAGAction is what a command asks of an instance.
type DAGAction string

// DAGCommand pauses, resumes or stops an instance.
type DAGCommand struct {
	Action   DAGAction `json:"action" required:"true"`
	Identity string    `json:"identity,omitempty" max:"256"`
}

// DAGRerun starts an ended instance again: from its failed tasks
// (failed), or at chosen ones.
type DAGRerun struct {
	Failed    bool     `json:"failed,omitempty"`
	StartFrom []string `json:"start_from,omitempty" max:"1000" maxvalue:"100"`
	Identity  string   `json:"identity,omitempty" max:"256"`
}

// dagRoutes are the routes of DAG pipelines (package dag), for the
// console: the CLI and Go programs use package dag over the routes above.
func dagRoutes(h *handler, svc dag.Service) []Route {
	dags := prefix + "/dags"
	one := dags + "/{name}"
	insts := prefix + "/namespaces/{namespace}/dag-instances"
	inst := insts + "/{workflow_id}"
	catalog := dag.NewCatalog(svc)
	if h.opts.Resources != nil {
		catalog.Uses = h.opts.Resources // the applying user's rights, from the request
	}
	client := func(r *http.Request) *dag.Client { return dag.NewClient(svc, r.PathValue("namespace")) }
	version := func(ctx context.Context, r *http.Request, v int32) (DAGVersion, error) {
		name := r.PathValue("name")
		rel, err := catalog.Release(ctx, name)
		if err != nil {
			return DAGVersion{}, err
		}
		d, err := catalog.Get(ctx, name, v)
		if err != nil {
			return DAGVersion{}, err
		}
		parsed, _ := dag.Parse(d.Body) // a version stored before a check it fails still shows its text
		return DAGVersion{Release: rel, Stored: d, Definition: parsed}, nil
	}
	return []Route{
		{"POST", prefix + "/dag-check", "Check a definition's text without storing it: its problems, each with its line and column", call(h, func(ctx context.Context, _ *http.Request, req DAGText) (DAGCheck, error) {
			if req.Text == "" {
				return DAGCheck{}, api.InvalidArgument("text", "empty")
			}
			d, err := dag.Parse([]byte(req.Text))
			var de *dag.DefinitionError
			if errors.As(err, &de) {
				return DAGCheck{Problems: de.Problems}, nil
			}
			return DAGCheck{Valid: err == nil, Definition: d}, err
		})},
		{"POST", dags, "Apply a definition: check it and store a new version when it changed (it becomes current)", call(h, func(ctx context.Context, _ *http.Request, req DAGText) (DAGApplied, error) {
			a, err := dag.NewClient(svc, req.Namespace).Apply(ctx, []byte(req.Text), req.Identity, req.Offline)
			if err != nil {
				return DAGApplied{}, err
			}
			return DAGApplied{Name: a.Definition.Name, Version: a.Version, SHA1: a.SHA1, Changed: a.Changed, Release: a.Release, Warnings: a.Warnings}, nil
		})},
		{"GET", dags, "List the DAGs with their current version and release state", get(h, func(ctx context.Context, _ *http.Request) (DAGList, error) {
			all, err := catalog.List(ctx)
			if all == nil {
				all = []dag.Summary{}
			}
			return DAGList{DAGs: all}, err
		})},
		{"GET", one, "Describe a DAG: its release and its current version, text and graph", get(h, func(ctx context.Context, r *http.Request) (DAGVersion, error) {
			return version(ctx, r, 0)
		})},
		{"GET", one + "/versions", "List a DAG's versions", get(h, func(ctx context.Context, r *http.Request) (DAGVersionList, error) {
			all, err := catalog.Versions(ctx, r.PathValue("name"))
			if all == nil {
				all = []api.Definition{}
			}
			return DAGVersionList{Versions: all}, err
		})},
		{"GET", one + "/versions/{version}", "Get a version of a DAG, its text and graph", get(h, func(ctx context.Context, r *http.Request) (DAGVersion, error) {
			v := r.PathValue("version")
			if v == "latest" {
				v = "0" // the current version
			}
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return DAGVersion{}, api.InvalidArgument("version", "want a version number or latest, got %q", r.PathValue("version"))
			}
			return version(ctx, r, int32(n))
		})},
		{"POST", one + "/release", "Put a DAG online or offline, or make a version current", call(h, func(ctx context.Context, r *http.Request, req DAGRelease) (dag.Release, error) {
			name := r.PathValue("name")
			if req.Current > 0 {
				if err := catalog.SetCurrent(ctx, name, req.Current, req.Identity); err != nil {
					return dag.Release{}, err
				}
			}
			if req.Online != nil {
				if err := catalog.SetOnline(ctx, name, *req.Online, req.Identity); err != nil {
					return dag.Release{}, err
				}
			}
			return catalog.Release(ctx, name)
		})},
		{"POST", prefix + "/namespaces/{namespace}/dags/{name}/instances", "Start an instance of a DAG", call(h, func(ctx context.Context, r *http.Request, req DAGRun) (dag.Started, error) {
			fs := req.FailureStrategy
			return client(r).Start(ctx, dag.RunInput{DAG: r.PathValue("name"), Version: req.Version, Params: req.Params,
				FailureStrategy: fs, WorkerGroup: req.WorkerGroup, StartFrom: req.StartFrom, ScheduleTime: req.ScheduleTime},
				dag.StartOptions{ID: req.ID, Identity: req.Identity})
		})},
		{"GET", prefix + "/namespaces/{namespace}/dags/{name}/instances", "List a DAG's instances, newest first", get(h, func(ctx context.Context, r *http.Request) (api.ListResponse, error) {
			size, token, err := pageParams(r)
			if err != nil {
				return api.ListResponse{}, err
			}
			return client(r).Instances(ctx, r.PathValue("name"), dag.State(r.URL.Query().Get("state")), size, token)
		}).with(intQuery("page_size", 0, 1000, "instances per page (0: 100)"), bytesQuery("page_token", "next_page_token of the page before"),
			textParam("state", "only instances in this state (success, failure, running, paused, stop, ...)", store.MaxAttributeValue))},
		{"POST", prefix + "/namespaces/{namespace}/dags/{name}/backfills", "Backfill a DAG (complement data): start a run that starts an instance for each business date of a range or a list, serial or parallel", call(h, func(ctx context.Context, r *http.Request, req DAGBackfill) (dag.Backfill, error) {
			return client(r).Backfill(ctx, dag.BackfillRequest{DAG: r.PathValue("name"), From: req.From, To: req.To, Dates: req.Dates, At: req.At,
				TimeZone: req.TimeZone, Parallelism: req.Parallelism, Dependents: req.Dependents, Version: req.Version, Params: req.Params,
				FailureStrategy: req.FailureStrategy, WorkerGroup: req.WorkerGroup, Priority: dag.Priority(req.Priority), ID: req.ID, Identity: req.Identity})
		})},
		{"GET", prefix + "/namespaces/{namespace}/dags/{name}/backfills/{backfill_id}", "A backfill's progress: each date's instances and their states", get(h, func(ctx context.Context, r *http.Request) (dag.Backfill, error) {
			b, err := client(r).BackfillProgress(ctx, r.PathValue("backfill_id"))
			if err == nil && b.DAG != r.PathValue("name") {
				return dag.Backfill{}, fmt.Errorf("%w: %s is not a backfill of %s", api.ErrNotFound, r.PathValue("backfill_id"), r.PathValue("name"))
			}
			return b, err
		})},
		{"GET", inst, "Describe an instance: its state and its tasks'", get(h, func(ctx context.Context, r *http.Request) (DAGInstance, error) {
			in, rec, err := client(r).Instance(ctx, r.PathValue("workflow_id"))
			return DAGInstance{Run: rec, Instance: in}, err
		})},
		{"POST", inst + "/command", "Pause, resume or stop an instance", call(h, func(ctx context.Context, r *http.Request, req DAGCommand) (struct{}, error) {
			return struct{}{}, client(r).Command(ctx, r.PathValue("workflow_id"), string(req.Action), req.Identity)
		})},
		{"POST", inst + "/rerun", "Start an ended instance again: from its failed tasks, or at chosen ones", call(h, func(ctx context.Context, r *http.Request, req DAGRerun) (dag.Started, error) {
			return client(r).Restart(ctx, r.PathValue("workflow_id"), req.Failed, req.StartFrom, req.Identity)
		})},
		{"GET", inst + "/tasks/{task}/log", "A task's log: of its last attempt, or of the attempt the attempt parameter names (1 is the first; the answer's attempts counts them), with where and when the attempt ran and how it ended", get(h, func(ctx context.Context, r *http.Request) (dag.TaskLog, error) {
			n, err := intParam(r.URL.Query(), "attempt", math.MaxInt32)
			if err != nil {
				return dag.TaskLog{}, err
			}
			return client(r).AttemptLog(ctx, r.PathValue("workflow_id"), r.PathValue("task"), int32(n))
		}).with(intQuery("attempt", 0, math.MaxInt32, "the attempt whose log to read, 1 the first (0 or none: the last)"))},
	}
}
