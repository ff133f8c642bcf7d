package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag"
)

// AlertGroupSet creates or replaces an alert group: the whole group (what
// it does not name is no longer in it).
type AlertGroupSet struct {
	dag.AlertGroup
	Identity string `json:"identity,omitempty" max:"256"`
}

// AlertGroupList is the alert groups, by name.
type AlertGroupList struct {
	Groups []dag.AlertGroupInfo `json:"groups"`
}

// AlertGroupDetail is an alert group and the last alerts it sent, newest
// first.
type AlertGroupDetail struct {
	dag.AlertGroupInfo
	Recent []dag.SentAlert `json:"recent"`
}

// AlertGroupTest asks for a test alert through each of a group's channels.
type AlertGroupTest struct {
	Identity string `json:"identity,omitempty" max:"256"`
}

// AlertGroupTested is what each channel answered a test alert.
type AlertGroupTested struct {
	Results []dag.ChannelResult `json:"results"`
}

// UserDirectory is the user directory of alert groups over access
// control's users: a user's email address, or a typed error for a user
// that does not exist, has none or is disabled.
func UserDirectory(ac *access.Service) dag.UserDirectory { return userDirectory{ac} }

type userDirectory struct{ ac *access.Service }

func (d userDirectory) UserEmail(ctx context.Context, name string) (string, error) {
	u, err := d.ac.GetUser(ctx, name)
	if errors.Is(err, api.ErrNotFound) {
		return "", api.InvalidArgument("users", "there is no user %s (strand user list)", name)
	}
	if err != nil {
		return "", err
	}
	if u.Disabled {
		return "", api.InvalidArgument("users", "user %s is disabled", name)
	}
	if u.Email == "" {
		return "", api.InvalidArgument("users", "user %s has no email address: give them one (strand user email %s ADDRESS) or list the address itself (--email)", name, name)
	}
	return u.Email, nil
}

// alertRoutes are the routes of the DAGs' alert groups.
func alertRoutes(h *handler, svc dag.Service) []Route {
	groups := prefix + "/alert-groups"
	one := groups + "/{name}"
	catalog := dag.NewCatalog(svc)
	alerter := h.opts.Alerts
	if alerter == nil {
		var users dag.UserDirectory
		if h.opts.Access != nil {
			users = UserDirectory(h.opts.Access)
		}
		alerter = dag.NewAlerter(svc, dag.AlertOptions{Users: users, Logger: h.opts.Logger})
	}
	return []Route{
		{"GET", groups, "List the alert groups: who each one's alerts go to, and through which channels", get(h, func(ctx context.Context, _ *http.Request) (AlertGroupList, error) {
			all, err := catalog.AlertGroups(ctx)
			return AlertGroupList{Groups: all}, err
		})},
		{"PUT", one, "Create or replace an alert group: its users and addresses to email, copies, and webhook", call(h, func(ctx context.Context, r *http.Request, req AlertGroupSet) (dag.AlertGroupInfo, error) {
			name := r.PathValue("name")
			if err := dag.CheckAlertGroup(ctx, &req.AlertGroup, alerter.Users()); err != nil {
				return dag.AlertGroupInfo{}, err
			}
			if err := catalog.SetAlertGroup(ctx, name, req.AlertGroup, req.Identity); err != nil {
				return dag.AlertGroupInfo{}, err
			}
			return catalog.AlertGroupInfo(ctx, name)
		})},
		{"GET", one, "Describe an alert group and the last alerts it sent", get(h, func(ctx context.Context, r *http.Request) (AlertGroupDetail, error) {
			name := r.PathValue("name")
			info, err := catalog.AlertGroupInfo(ctx, name)
			if err != nil {
				return AlertGroupDetail{}, err
			}
			recent, err := alerter.Recent(ctx, name)
			return AlertGroupDetail{AlertGroupInfo: info, Recent: recent}, err
		})},
		{"DELETE", one, "Delete an alert group: the DAGs that name it send no more alerts", get(h, func(ctx context.Context, r *http.Request) (struct{}, error) {
			return struct{}{}, catalog.DeleteAlertGroup(ctx, r.PathValue("name"), r.URL.Query().Get("identity"))
		}).with(param{"identity", map[string]any{"type": "string", "maxLength": 256}, "who deletes it, for the record"})},
		{"POST", one + "/test", "Send a test alert through each of an alert group's channels and say what each answered", call(h, func(ctx context.Context, r *http.Request, req AlertGroupTest) (AlertGroupTested, error) {
			results, err := alerter.Test(ctx, r.PathValue("name"), req.Identity)
			if results == nil {
				results = []dag.ChannelResult{}
			}
			return AlertGroupTested{Results: results}, err
		})},
	}
}
