package remote

import (
	"context"
	"net/url"

	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/server"
)

// The calls of the DAGs' alert groups.

// SetAlertGroup creates or replaces an alert group.
func (s *Service) SetAlertGroup(ctx context.Context, name string, req server.AlertGroupSet) (dag.AlertGroupInfo, error) {
	var out dag.AlertGroupInfo
	_, err := s.do(ctx, idempotent, "PUT", "/alert-groups/"+url.PathEscape(name), req, &out)
	return out, err
}

// ListAlertGroups lists the alert groups.
func (s *Service) ListAlertGroups(ctx context.Context) ([]dag.AlertGroupInfo, error) {
	var out server.AlertGroupList
	_, err := s.do(ctx, idempotent, "GET", "/alert-groups", nil, &out)
	return out.Groups, err
}

// GetAlertGroup describes an alert group and the last alerts it sent.
func (s *Service) GetAlertGroup(ctx context.Context, name string) (server.AlertGroupDetail, error) {
	var out server.AlertGroupDetail
	_, err := s.do(ctx, idempotent, "GET", "/alert-groups/"+url.PathEscape(name), nil, &out)
	return out, err
}

// DeleteAlertGroup deletes an alert group.
func (s *Service) DeleteAlertGroup(ctx context.Context, name, identity string) error {
	_, err := s.do(ctx, sendOnce, "DELETE", "/alert-groups/"+url.PathEscape(name)+"?identity="+url.QueryEscape(identity), nil, nil)
	return err
}

// TestAlertGroup sends a test alert through each of a group's channels.
func (s *Service) TestAlertGroup(ctx context.Context, name, identity string) ([]dag.ChannelResult, error) {
	var out server.AlertGroupTested
	_, err := s.do(ctx, sendOnce, "POST", "/alert-groups/"+url.PathEscape(name)+"/test", server.AlertGroupTest{Identity: identity}, &out)
	return out.Results, err
}
