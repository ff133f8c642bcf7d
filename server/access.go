package server

import (
	"context"
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
				if err := ac.SetPassword(ctx, name, req.Password); err != nil {
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
	return endpoint{req: reflect.TypeFor[LoginRequest](), resp: reflect.TypeFor[LoginResponse](), serve: func(w http.ResponseWriter, r *http.Request) {
		var req LoginRequest
		release, err := h.decode(w, r, &req)
		defer release()
		if err != nil {
			writeError(w, err)
			return
		}
		ttl := req.TTL
		switch {
		case ttl < 0 || ttl > maxTokenTTL:
			writeError(w, api.InvalidArgument("ttl", "want 0 to %v", maxTokenTTL))
			return
		case ttl == 0 && req.Session:
			ttl = sessionTTL
		case ttl == 0:
			ttl = loginTTL
		}
		id, err := ac.Login(r.Context(), req.Name, req.Password)
		if err != nil {
			writeError(w, err)
			return
		}
		secret, t, err := ac.CreateToken(r.Context(), access.NewToken{User: id.Name, Name: loginTokenName(r, req.Session), TTL: ttl, Session: req.Session})
		if err != nil {
			writeError(w, err)
			return
		}
		resp := LoginResponse{ExpiresAt: t.ExpiresAt, Identity: id}
		if req.Session {
			http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: secret, Path: "/", Expires: t.ExpiresAt,
				HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
		} else {
			resp.Token = secret
		}
		writeJSON(w, http.StatusOK, resp)
	}}
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
