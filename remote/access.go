package remote

import (
	"context"
	"encoding/base64"
	"net/url"
	"strconv"
	"time"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/server"
)

// The calls of users, tokens and grants: what access.Service does on the
// store, done by a server for a caller allowed to.

// WhoAmI returns who the server takes the caller for.
func (s *Service) WhoAmI(ctx context.Context) (server.WhoAmI, error) {
	var out server.WhoAmI
	_, err := s.do(ctx, idempotent, "GET", "/whoami", nil, &out)
	return out, err
}

// Login trades a user's name and password for an API token.
func (s *Service) Login(ctx context.Context, req server.LoginRequest) (server.LoginResponse, error) {
	var out server.LoginResponse
	_, err := s.do(ctx, sendOnce, "POST", "/login", req, &out)
	return out, err
}

// Logout revokes the token the service calls with.
func (s *Service) Logout(ctx context.Context) error {
	_, err := s.do(ctx, sendOnce, "POST", "/logout", struct{}{}, nil)
	return err
}

// CreateUser creates a user or service account (a cluster admin's call).
func (s *Service) CreateUser(ctx context.Context, nu access.NewUser) (access.User, error) {
	var out access.User
	_, err := s.do(ctx, sendOnce, "POST", "/users", nu, &out)
	return out, err
}

// ListUsers lists users and service accounts.
func (s *Service) ListUsers(ctx context.Context) ([]access.User, error) {
	var out server.UserList
	_, err := s.do(ctx, idempotent, "GET", "/users", nil, &out)
	return out.Users, err
}

// UpdateUser changes a user's password or flags.
func (s *Service) UpdateUser(ctx context.Context, name string, req server.UpdateUserRequest) (access.User, error) {
	var out access.User
	_, err := s.do(ctx, sendOnce, "PUT", "/users/"+url.PathEscape(name), req, &out)
	return out, err
}

// SetGroups sets the groups a user is in.
func (s *Service) SetGroups(ctx context.Context, name string, groups []string) (access.User, error) {
	if groups == nil {
		groups = []string{}
	}
	return s.UpdateUser(ctx, name, server.UpdateUserRequest{Groups: &groups})
}

// SetEmail sets a user's email address.
func (s *Service) SetEmail(ctx context.Context, name, email string) (access.User, error) {
	return s.UpdateUser(ctx, name, server.UpdateUserRequest{Email: &email})
}

// Unlock lifts the lock of failed logins on a user name (a cluster
// admin's call); it reports whether the name was locked on the node that
// served the call.
func (s *Service) Unlock(ctx context.Context, name string) (bool, error) {
	var out server.UnlockResponse
	_, err := s.do(ctx, idempotent, "POST", "/users/"+url.PathEscape(name)+"/unlock", struct{}{}, &out)
	return out.WasLocked, err
}

// ChangePassword changes the caller's own password, given the current one;
// the caller's other login sessions end.
func (s *Service) ChangePassword(ctx context.Context, req server.ChangePasswordRequest) (server.ChangePasswordResponse, error) {
	var out server.ChangePasswordResponse
	_, err := s.do(ctx, sendOnce, "PUT", "/whoami/password", req, &out)
	return out, err
}

// DeleteUser deletes a user and revokes their tokens.
func (s *Service) DeleteUser(ctx context.Context, name string) error {
	_, err := s.do(ctx, sendOnce, "DELETE", "/users/"+url.PathEscape(name), nil, nil)
	return err
}

// Grant sets the roles a user holds in a namespace.
func (s *Service) Grant(ctx context.Context, name, namespace string, roles ...access.Role) (access.User, error) {
	if roles == nil {
		roles = []access.Role{}
	}
	var out server.Grant
	_, err := s.do(ctx, sendOnce, "PUT", "/namespaces/"+ns(namespace)+"/grants/"+url.PathEscape(name), server.Grant{Roles: roles}, &out)
	return access.User{Name: out.User, Grants: map[string][]access.Role{namespace: out.Roles}}, err
}

// CreateToken makes an API token; the token is returned this once.
func (s *Service) CreateToken(ctx context.Context, nt access.NewToken) (string, access.Token, error) {
	var out server.CreateTokenResponse
	_, err := s.do(ctx, sendOnce, "POST", "/tokens", nt, &out)
	return out.Token, out.Info, err
}

// ListTokens lists the caller's tokens, or a user's (a cluster admin's
// call; "" for every user's).
func (s *Service) ListTokens(ctx context.Context, user string) ([]access.Token, error) {
	var out server.TokenList
	_, err := s.do(ctx, idempotent, "GET", "/tokens?user="+url.QueryEscape(user), nil, &out)
	return out.Tokens, err
}

// RevokeToken revokes a token by id.
func (s *Service) RevokeToken(ctx context.Context, id string) error {
	_, err := s.do(ctx, sendOnce, "DELETE", "/tokens/"+url.PathEscape(id), nil, nil)
	return err
}

// AuditQuery selects entries of the audit log.
type AuditQuery struct {
	Namespace, Actor string
	Since, Until     time.Time
	PageSize         int
	PageToken        []byte
}

// ListAudit reads a page of the audit log, newest first.
func (s *Service) ListAudit(ctx context.Context, q AuditQuery) (server.AuditList, error) {
	v := url.Values{}
	if q.Namespace != "" {
		v.Set("namespace", q.Namespace)
	}
	if q.Actor != "" {
		v.Set("actor", q.Actor)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.Format(time.RFC3339Nano))
	}
	if q.PageSize > 0 {
		v.Set("page_size", strconv.Itoa(q.PageSize))
	}
	if len(q.PageToken) > 0 {
		v.Set("page_token", base64.StdEncoding.EncodeToString(q.PageToken))
	}
	var out server.AuditList
	_, err := s.do(ctx, idempotent, "GET", "/audit?"+v.Encode(), nil, &out)
	return out, err
}

// GetQuotas implements api.QuotaService.
func (s *Service) GetQuotas(ctx context.Context, namespace string) (api.Quotas, error) {
	var out api.Quotas
	_, err := s.do(ctx, idempotent, "GET", "/namespaces/"+ns(namespace)+"/quotas", nil, &out)
	return out, err
}

// SetQuotas implements api.QuotaService.
func (s *Service) SetQuotas(ctx context.Context, namespace string, q api.Quotas) (api.Quotas, error) {
	var out api.Quotas
	_, err := s.do(ctx, idempotent, "PUT", "/namespaces/"+ns(namespace)+"/quotas", q, &out)
	return out, err
}
