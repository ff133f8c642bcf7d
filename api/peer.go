package api

import (
	"context"
	"encoding/json"
	"hash/fnv"
)

// Peering is the part of a node's API that only other nodes of its cluster
// call: a poll forwarded from a node whose workers wait, a child started or
// a parent told of its child's close on the shard's owner, a task handed
// back. Op names the call; in and the answer are its JSON.
type Peering interface {
	PeerCall(ctx context.Context, op string, in json.RawMessage) (json.RawMessage, error)
}

// Peer is another node as a node sees it: its public API and its peering
// calls (package remote provides one over HTTP).
type Peer interface {
	Service
	Peering
}

type forwardedKey struct{}

// WithForwarded marks ctx as carrying a request one node forwarded to
// another; the receiver serves it itself or answers ErrUnavailable, and
// never forwards it again (so two nodes whose views of the cluster differ
// for a moment cannot bounce a request between them).
func WithForwarded(ctx context.Context) context.Context {
	return context.WithValue(ctx, forwardedKey{}, true)
}

// Forwarded reports whether ctx carries a forwarded request.
func Forwarded(ctx context.Context) bool {
	v, _ := ctx.Value(forwardedKey{}).(bool)
	return v
}

// ForwardedHeader is the HTTP header that marks a forwarded request.
const ForwardedHeader = "Strand-Forwarded"

// ShardInfo is one shard as the store records it, and whether the node
// answering serves it.
type ShardInfo struct {
	ID      int32  `json:"id"`
	Owner   string `json:"owner"`
	RangeID int64  `json:"range_id"`
	// Serving: the node that answered owns the shard and serves it.
	Serving bool `json:"serving"`
}

// ShardOf returns the shard of a workflow id (of namespace ns, which must
// not be empty) in a cluster of shards shards: FNV-1a of the namespace, a
// NUL and the id. Clients use it to call the shard's owner directly.
func ShardOf(ns, workflowID string, shards int) int32 {
	h := fnv.New32a()
	h.Write([]byte(ns))
	h.Write([]byte{0})
	h.Write([]byte(workflowID))
	return int32(h.Sum32() % uint32(shards))
}
