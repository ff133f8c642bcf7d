package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
)

// WhoAmI is the caller as the server knows them.
type WhoAmI struct {
	access.Identity
	// AccessControl is false on a server that serves everyone as
	// anonymous.
	AccessControl bool `json:"access_control"`
}

// LoginRequest is a user's name and password.
type LoginRequest struct {
	Name     string `json:"name" required:"true" max:"128" text:"true"`
	Password string `json:"password" required:"true" max:"72"`
	// Session asks for a session cookie (the console) instead of a token
	// in the answer.
	Session bool `json:"session,omitempty"`
	// TTL is how long the token is accepted (default 12h for a session,
	// 30 days for a token; at most a year).
	TTL time.Duration `json:"ttl,omitempty" minimum:"0" maximum:"31536000000000000"`
}

// LoginResponse is the token a login made (empty for a session: it is in
// the cookie).
type LoginResponse struct {
	Token     string          `json:"token,omitempty"`
	ExpiresAt time.Time       `json:"expires_at"`
	Identity  access.Identity `json:"identity"`
}

// UserList is a list of users.
type UserList struct {
	Users []access.User `json:"users"`
}

// UpdateUserRequest changes a user: each set field.
type UpdateUserRequest struct {
	Password     string `json:"password,omitempty" max:"72" pattern:"^$|^[\\s\\S]{8,}$"`
	ClusterAdmin *bool  `json:"cluster_admin,omitempty"`
	Disabled     *bool  `json:"disabled,omitempty"`
	// Groups, when set, replaces the groups the user is in.
	Groups *[]string `json:"groups,omitempty" max:"100" maxvalue:"128" itempattern:"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$" unique:"true"`
	// Email, when set, replaces the user's email address ("": none).
	Email *string `json:"email,omitempty" max:"256" pattern:"^$|@"`
}

// CreateTokenResponse is a new token: shown this once.
type CreateTokenResponse struct {
	Token string       `json:"token"`
	Info  access.Token `json:"info"`
}

// TokenList is a list of tokens (never their secrets).
type TokenList struct {
	Tokens []access.Token `json:"tokens"`
}

// ChangePasswordRequest is a user's change of their own password.
type ChangePasswordRequest struct {
	// CurrentPassword is the password now: a wrong one changes nothing and
	// counts as a failed login.
	CurrentPassword string `json:"current_password" required:"true" max:"72" example:"old password"`
	NewPassword     string `json:"new_password" required:"true" max:"72" example:"new password"`
}

// ChangePasswordResponse says how many of the user's other login sessions
// the change ended (the console's and strand login's; not API tokens).
type ChangePasswordResponse struct {
	SessionsEnded int `json:"sessions_ended"`
}

// UnlockResponse says whether the name's logins were locked or backing
// off (on the node that served the call) before the unlock.
type UnlockResponse struct {
	User      string `json:"user"`
	WasLocked bool   `json:"was_locked"`
}

// Grant is the roles a user holds in a namespace.
type Grant struct {
	User  string        `json:"user"`
	Roles []access.Role `json:"roles"`
}

// GrantList is the grants of a namespace.
type GrantList struct {
	Grants []Grant `json:"grants"`
}

// Lifetimes of the tokens a login makes.
const (
	sessionTTL  = 12 * time.Hour
	loginTTL    = 30 * 24 * time.Hour
	maxTokenTTL = 365 * 24 * time.Hour
)

// accessRoutes are the routes of users, tokens and grants.
func accessRoutes(h *handler, ac *access.Service) []Route {
	self := func(ctx context.Context) access.Identity {
		id, _ := access.FromContext(ctx)
		return id
	}
	// mayManage: a cluster admin manages anyone's tokens, a caller their own.
	mayManage := func(ctx context.Context, user string) error {
		if id := self(ctx); !id.ClusterAdmin && id.Name != user {
			return denied(id, "cluster admin (the tokens are %q's)", user)
		}
		return nil
	}
	return []Route{
		{"GET", prefix + "/whoami", "Who the caller is and the roles they hold", get(h, func(ctx context.Context, _ *http.Request) (WhoAmI, error) {
			return WhoAmI{Identity: self(ctx), AccessControl: h.opts.Access != nil && !h.opts.Open}, nil
		})},
		{"POST", prefix + "/login", "Log in with a name and password: a token, or a session cookie for the console", h.login(ac)},
		{"POST", prefix + "/logout", "Revoke the token or session the request came with (and clear the session cookie)", endpoint{resp: reflect.TypeFor[struct{}](), serve: func(w http.ResponseWriter, r *http.Request) {
			if id := self(r.Context()); id.TokenID != "" {
				if err := ac.RevokeToken(r.Context(), id.TokenID); err != nil {
					writeError(w, err)
					return
				}
			}
			http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
			writeJSON(w, http.StatusOK, struct{}{})
		}}},
		{"GET", prefix + "/users", "List users and service accounts", get(h, func(ctx context.Context, _ *http.Request) (UserList, error) {
			users, err := ac.ListUsers(ctx)
			return UserList{Users: users}, err
		})},
		{"POST", prefix + "/users", "Create a user (with a password) or a service account", call(h, func(ctx context.Context, _ *http.Request, req access.NewUser) (access.User, error) {
			return ac.CreateUser(ctx, req)
		})},
		{"GET", prefix + "/users/{user}", "Describe a user", get(h, func(ctx context.Context, r *http.Request) (access.User, error) {
			return ac.GetUser(ctx, r.PathValue("user"))
		})},
		{"PUT", prefix + "/users/{user}", "Change a user's password, cluster admin flag, disabled flag, groups or email address", call(h, func(ctx context.Context, r *http.Request, req UpdateUserRequest) (access.User, error) {
			name := r.PathValue("user")
			if req.Password != "" {
				// The user's login sessions end; a cluster admin changing
				// their own password this way keeps the one they call with.
				keep := ""
				if id := self(ctx); id.Name == name {
					keep = id.TokenID
				}
				if _, err := ac.SetPassword(ctx, name, req.Password, keep); err != nil {
					return access.User{}, err
				}
			}
			if req.ClusterAdmin != nil {
				if _, err := ac.SetClusterAdmin(ctx, name, *req.ClusterAdmin); err != nil {
					return access.User{}, err
				}
			}
			if req.Disabled != nil {
				if _, err := ac.SetDisabled(ctx, name, *req.Disabled); err != nil {
					return access.User{}, err
				}
			}
			if req.Groups != nil {
				if _, err := ac.SetGroups(ctx, name, *req.Groups); err != nil {
					return access.User{}, err
				}
			}
			if req.Email != nil {
				if _, err := ac.SetEmail(ctx, name, *req.Email); err != nil {
					return access.User{}, err
				}
			}
			return ac.GetUser(ctx, name)
		})},
		{"POST", prefix + "/users/{user}/unlock", "Lift the lock (or back-off) that failed logins put on a user name", get(h, func(ctx context.Context, r *http.Request) (UnlockResponse, error) {
			was, err := ac.Unlock(ctx, r.PathValue("user"))
			return UnlockResponse{User: r.PathValue("user"), WasLocked: was}, err
		})},
		{"PUT", prefix + "/whoami/password", "Change your own password, giving the current one: your other login sessions end", loginCall(h, func(_ http.ResponseWriter, r *http.Request, req ChangePasswordRequest) (ChangePasswordResponse, error) {
			ctx := r.Context()
			id := self(ctx)
			if id.Kind != access.KindUser {
				return ChangePasswordResponse{}, fmt.Errorf("%w: %s %q has no password to change", api.ErrFailedPrecondition, id.Kind, id.Name)
			}
			ended, err := ac.ChangePassword(ctx, access.PasswordChange{Name: id.Name, Current: req.CurrentPassword, New: req.NewPassword,
				Address: remoteHost(r.RemoteAddr), Keep: id.TokenID})
			return ChangePasswordResponse{SessionsEnded: ended}, err
		})},
		{"DELETE", prefix + "/users/{user}", "Delete a user and revoke their tokens", get(h, func(ctx context.Context, r *http.Request) (struct{}, error) {
			return struct{}{}, ac.DeleteUser(ctx, r.PathValue("user"))
		})},
		{"GET", prefix + "/tokens", "List the caller's tokens, a user's (user=NAME) or everyone's (user=*; cluster admins)", get(h, func(ctx context.Context, r *http.Request) (TokenList, error) {
			user, id := r.URL.Query().Get("user"), self(ctx)
			switch {
			case user == "*" && !id.ClusterAdmin:
				return TokenList{}, denied(id, "cluster admin")
			case user == "*":
				user = ""
			case user == "" && id.Kind != access.KindAnonymous && id.Kind != access.KindNode:
				user = id.Name
			case user != "":
				if err := mayManage(ctx, user); err != nil {
					return TokenList{}, err
				}
			}
			tokens, err := ac.ListTokens(ctx, user)
			return TokenList{Tokens: tokens}, err
		}).with(stringParam("user", "whose tokens: a user's name, or * for everyone's (default: the caller's)"))},
		{"POST", prefix + "/tokens", "Make an API token (for the caller unless a cluster admin names a user); shown once", call(h, func(ctx context.Context, _ *http.Request, req access.NewToken) (CreateTokenResponse, error) {
			if req.User == "" {
				req.User = self(ctx).Name
			}
			if err := mayManage(ctx, req.User); err != nil {
				return CreateTokenResponse{}, err
			}
			if req.TTL > maxTokenTTL {
				return CreateTokenResponse{}, api.InvalidArgument("ttl", "at most %v", maxTokenTTL)
			}
			secret, t, err := ac.CreateToken(ctx, req)
			return CreateTokenResponse{Token: secret, Info: t}, err
		})},
		{"DELETE", prefix + "/tokens/{id}", "Revoke a token (the caller's own; any by a cluster admin)", get(h, func(ctx context.Context, r *http.Request) (struct{}, error) {
			t, err := ac.GetToken(ctx, r.PathValue("id"))
			if err != nil {
				return struct{}{}, err
			}
			if err := mayManage(ctx, t.User); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, ac.RevokeToken(ctx, t.ID)
		})},
		{"GET", prefix + "/namespaces/{namespace}/grants", "List who holds which roles in a namespace", get(h, func(ctx context.Context, r *http.Request) (GrantList, error) {
			if err := h.namespaceExists(ctx, r.PathValue("namespace")); err != nil {
				return GrantList{}, err
			}
			users, err := ac.ListUsers(ctx)
			out := GrantList{Grants: []Grant{}}
			for _, u := range users {
				if roles := u.Grants[r.PathValue("namespace")]; len(roles) > 0 {
					out.Grants = append(out.Grants, Grant{User: u.Name, Roles: roles})
				}
			}
			return out, err
		})},
		{"PUT", prefix + "/namespaces/{namespace}/grants/{user}", "Set the roles a user holds in a namespace (none: take them away)", call(h, func(ctx context.Context, r *http.Request, req Grant) (Grant, error) {
			if err := h.namespaceExists(ctx, r.PathValue("namespace")); err != nil {
				return Grant{}, err
			}
			u, err := ac.Grant(ctx, r.PathValue("user"), r.PathValue("namespace"), req.Roles...)
			roles := u.Grants[r.PathValue("namespace")]
			if roles == nil {
				roles = []access.Role{} // none held: an empty list, as the schema says
			}
			return Grant{User: u.Name, Roles: roles}, err
		}).pathFields("user")},
	}
}

// login serves POST /login.
func (h *handler) login(ac *access.Service) endpoint {
	return loginCall(h, func(w http.ResponseWriter, r *http.Request, req LoginRequest) (LoginResponse, error) {
		ctx := r.Context()
		ttl := req.TTL
		switch {
		case ttl < 0 || ttl > maxTokenTTL:
			return LoginResponse{}, api.InvalidArgument("ttl", "want 0 to %v", maxTokenTTL)
		case ttl == 0 && req.Session:
			ttl = sessionTTL
		case ttl == 0:
			ttl = loginTTL
		}
		id, err := ac.LoginFrom(ctx, req.Name, req.Password, remoteHost(r.RemoteAddr))
		if err != nil {
			return LoginResponse{}, err
		}
		secret, t, err := ac.CreateToken(ctx, access.NewToken{User: id.Name, Name: loginTokenName(r, req.Session), TTL: ttl, Session: req.Session, Login: true})
		if err != nil {
			return LoginResponse{}, err
		}
		resp := LoginResponse{ExpiresAt: t.ExpiresAt, Identity: id}
		if req.Session {
			http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: secret, Path: "/", Expires: t.ExpiresAt,
				HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
		} else {
			resp.Token = secret
		}
		return resp, nil
	})
}

// loginCall is call for the routes that check a password, with the
// response writer (a login sets its session cookie): a name or an address
// that failed too often is answered 429 rate_limited with Retry-After
// (writeError), and the failure that locks a name is audited.
func loginCall[Req, Resp any](h *handler, f func(w http.ResponseWriter, r *http.Request, req Req) (Resp, error)) endpoint {
	return endpoint{req: reflect.TypeFor[Req](), resp: reflect.TypeFor[Resp](), serve: func(w http.ResponseWriter, r *http.Request) {
		var req Req
		release, err := h.decode(w, r, &req)
		defer release()
		if err == nil {
			var resp Resp
			if resp, err = f(w, r, req); err == nil {
				writeJSON(w, http.StatusOK, resp)
				return
			}
		}
		var te *access.LoginThrottledError
		if errors.As(err, &te) && te.Locking {
			h.auditLock(r, te)
		}
		writeError(w, err)
	}}
}

// auditLock records that failed logins locked a name: an entry of its own
// beside the login's, acted by no one, from the address that failed last.
func (h *handler) auditLock(r *http.Request, te *access.LoginThrottledError) {
	if h.opts.Audit == nil {
		return
	}
	e := auditEntry(r, Route{Method: r.Method, Path: r.URL.Path}, http.StatusTooManyRequests, &auditNote{}, nil)
	e.Action, e.Target, e.Actor = "lock logins of a user name", te.Name, "(failed logins)"
	e.Detail, _ = json.Marshal(map[string]any{"failures": te.Failures, "locked_for": te.RetryAfter.String(),
		"unlock": "strand user unlock " + te.Name})
	h.opts.Audit.record(r.Context(), e)
}

func loginTokenName(r *http.Request, session bool) string {
	if session {
		return "console session from " + r.RemoteAddr
	}
	return fmt.Sprintf("login from %s", r.RemoteAddr)
}

// namespaceExists refuses a namespace that is not there (404) or could not
// be (400), as the namespace's other routes do.
func (h *handler) namespaceExists(ctx context.Context, name string) error {
	ns, ok := h.svc.(api.Namespaces)
	if !ok {
		return nil
	}
	_, err := ns.DescribeNamespace(ctx, name)
	return err
}
