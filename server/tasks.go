package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
)

// taskCaller is who asks about a task: the authenticated user, with their
// groups, and whether they administer the namespace; on a server without
// access control, whoever the request names (everyone is an admin there).
func taskCaller(ctx context.Context, namespace string, claimed api.TaskCaller) api.TaskCaller {
	id, ok := access.FromContext(ctx)
	if !ok || id.Kind == access.KindAnonymous {
		claimed.Admin = true
		if claimed.User == "" {
			claimed.User = access.Anonymous.Name
		}
		return claimed
	}
	return api.TaskCaller{User: id.Name, Groups: id.Groups, Admin: id.Can(namespace, access.Admin)}
}

// callerParams reads the caller a request names in its query (what a
// server without access control goes by).
func callerParams(q url.Values) api.TaskCaller {
	c := api.TaskCaller{User: q.Get("user")}
	if g := q.Get("groups"); g != "" {
		c.Groups = strings.Split(g, ",")
	}
	return c
}

// taskRoutes are the routes of human tasks: the inbox and the actions.
func taskRoutes(h *handler, ht api.HumanTasks) []Route {
	list := prefix + "/namespaces/{namespace}/tasks"
	one := list + "/{task_id}"
	callerQuery := []param{textParam("user", "who asks (a server with access control goes by the caller)", 256),
		stringParam("groups", "their groups, comma-separated (likewise)")}
	return []Route{
		{"GET", list, "List human tasks: the caller's (those they may claim or hold) or, for the namespace's admins, all", get(h, func(ctx context.Context, r *http.Request) (api.ListTasksResponse, error) {
			q := r.URL.Query()
			ns := r.PathValue("namespace")
			req := api.ListTasksRequest{Namespace: ns, Status: q.Get("status"), ParentWorkflowType: q.Get("parent_workflow_type"),
				TaskCaller: taskCaller(ctx, ns, callerParams(q))}
			var err error
			if req.Mine, err = boolParam(q, "mine"); err != nil {
				return api.ListTasksResponse{}, err
			}
			p, err := intParam(q, "priority", int64(api.PriorityLowest))
			if err != nil {
				return api.ListTasksResponse{}, err
			}
			req.Priority = int8(p)
			if req.DueBefore, err = timeParam(q, "due_before"); err != nil {
				return api.ListTasksResponse{}, err
			}
			return ht.ListTasks(ctx, req)
		}).with(append([]param{
			param{"status", map[string]any{"type": "string", "enum": []any{"", api.TaskOpen, api.TaskClaimed, "closed"}}, "open (default: open and claimed), claimed or closed"},
			boolQuery("mine", "only the tasks the caller may claim or holds"),
			intQuery("priority", 0, 5, "only this priority (0: any)"),
			param{"due_before", map[string]any{"type": "string", "format": "date-time"}, "only the tasks due before this time (RFC 3339)"},
			textParam("parent_workflow_type", "only the tasks asked for by runs of this type", 250),
		}, callerQuery...)...)},
		{"GET", one, "Describe a human task: its form, data, candidates, comments and actions", get(h, func(ctx context.Context, r *http.Request) (api.HumanTask, error) {
			ns := r.PathValue("namespace")
			return ht.DescribeTask(ctx, api.DescribeTaskRequest{TaskRef: api.TaskRef{Namespace: ns, TaskID: r.PathValue("task_id")},
				TaskCaller: taskCaller(ctx, ns, callerParams(r.URL.Query()))})
		}).with(callerQuery...)},
		{"POST", one + "/actions", "Act on a human task: claim, release, delegate, comment or complete (with data the form accepts)", call(h, func(ctx context.Context, r *http.Request, req api.TaskActionRequest) (api.HumanTask, error) {
			ns := r.PathValue("namespace")
			req.TaskRef = api.TaskRef{Namespace: ns, TaskID: r.PathValue("task_id")}
			req.TaskCaller = taskCaller(ctx, ns, req.TaskCaller)
			return ht.ActOnTask(ctx, req)
		}).pathFields("namespace", "task_id")},
	}
}
