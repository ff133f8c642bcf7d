// Package access says who may do what on a Strand server: users (with a
// password) and service accounts, the API tokens they call with, and the
// roles they hold per namespace.
//
// Roles, from least to most:
//
//	reader    read and list runs, schedules, definitions
//	writer    reader, and start, signal and query runs
//	operator  writer, and commands on runs (cancel, terminate, reset,
//	          pause, batches), schedules and definitions
//	admin     everything in the namespace, access included
//	worker    reader, and poll and complete the tasks of the namespace's
//	          queues
//
// A cluster admin holds every role in every namespace and manages
// namespaces, users and nodes. Users, tokens and grants are records of the
// store (store.Record), so every node of a cluster sees the same ones.
package access

import (
	"context"
	"fmt"
	"slices"
	"sort"
)

// Role is what a grant allows in a namespace.
type Role string

// The roles.
const (
	Reader   Role = "reader"
	Writer   Role = "writer"
	Operator Role = "operator"
	Admin    Role = "admin"
	Worker   Role = "worker"
)

// Roles lists every role, least first.
var Roles = []Role{Reader, Writer, Operator, Admin, Worker}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("access: unknown role %q (want one of reader, writer, operator, admin, worker)", s)
}

// Includes reports whether holding r allows what needs role need.
func (r Role) Includes(need Role) bool {
	switch r {
	case Admin:
		return true
	case Operator:
		return need == Operator || need == Writer || need == Reader
	case Writer:
		return need == Writer || need == Reader
	case Worker:
		return need == Worker || need == Reader
	case Reader:
		return need == Reader
	}
	return false
}

// Kind says what an identity is.
type Kind string

// The kinds of identity.
const (
	// KindUser is a person, who logs in with a password.
	KindUser Kind = "user"
	// KindService is a service account: a worker or a program, which
	// calls with tokens only.
	KindService Kind = "service"
	// KindAnonymous is whoever calls a server that runs without access
	// control (on loopback, with no user yet): it may do everything.
	KindAnonymous Kind = "anonymous"
	// KindNode is another node of the cluster, calling with the cluster's
	// secret.
	KindNode Kind = "node"
)

// Identity is who a request comes from and what they may do.
type Identity struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// ClusterAdmin holds every role in every namespace and manages
	// namespaces, users and nodes.
	ClusterAdmin bool `json:"cluster_admin,omitempty"`
	// Grants are the roles held per namespace.
	Grants map[string][]Role `json:"grants,omitempty"`
	// Groups are the groups the caller is in.
	Groups []string `json:"groups,omitempty"`
	// TokenID is the token the request came with ("" for a password or
	// the cluster secret).
	TokenID string `json:"token_id,omitempty"`
}

// Anonymous is the identity of every caller of a server without access
// control.
var Anonymous = Identity{Name: "anonymous", Kind: KindAnonymous, ClusterAdmin: true}

// Can reports whether the identity holds a role that includes need in
// namespace.
func (id Identity) Can(namespace string, need Role) bool {
	if id.ClusterAdmin {
		return true
	}
	for _, r := range id.Grants[namespace] {
		if r.Includes(need) {
			return true
		}
	}
	return false
}

// Namespaces returns the namespaces the identity holds a role in, sorted;
// a cluster admin's are all, which it reports with all set.
func (id Identity) Namespaces() (names []string, all bool) {
	if id.ClusterAdmin {
		return nil, true
	}
	for ns, roles := range id.Grants {
		if len(roles) > 0 {
			names = append(names, ns)
		}
	}
	sort.Strings(names)
	return names, false
}

// Roles returns the roles held in namespace, least first (every role for a
// cluster admin).
func (id Identity) Roles(namespace string) []Role {
	if id.ClusterAdmin {
		return slices.Clone(Roles)
	}
	var out []Role
	for _, r := range Roles {
		if slices.Contains(id.Grants[namespace], r) {
			out = append(out, r)
		}
	}
	return out
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the identity ctx carries, if any.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}
