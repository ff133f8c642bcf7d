package remote

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/server"
)

// A cluster's Service sends a call about one workflow (a start, a signal,
// a result wait, a history read…) to the node that owns the workflow's
// shard, when it knows which: any node would serve it, but another would
// forward it there, which costs both nodes an HTTP call. It learns the
// owners from the cluster's placement (GET /placement: the owner's
// address by shard), read again by the first call placementTTL after the
// last read; a call whose owner is not known, is down, or is not among the
// Service's nodes goes where it went before (see Service). A shard that
// moved since the last read is found by the old owner forwarding the call,
// as before.

// placementTTL is how long the shard owners read last are used.
const placementTTL = 5 * time.Second

// placement is where a cluster's workflows live, as the Service last read
// it.
type placement struct {
	mu sync.Mutex
	// owners are, by shard id, the nodes that own the shards (nil where
	// not known); empty before the first read.
	owners  []*node
	read    time.Time // when last read (or tried)
	reading bool
}

// owner returns the node of s that owns workflow id's shard in namespace
// ns, or nil when s has one node, the id is empty or the owner is not
// known. The first call after placementTTL reads the placement again
// first (a failed read leaves the last one).
func (s *Service) owner(ctx context.Context, ns, workflowID string) *node {
	if !s.cluster || workflowID == "" || api.Forwarded(ctx) {
		return nil
	}
	p := &s.place
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reading && time.Since(p.read) > placementTTL {
		p.reading = true
		p.mu.Unlock()
		owners := s.readPlacement(ctx)
		p.mu.Lock()
		if owners != nil {
			p.owners = owners
		}
		p.read, p.reading = time.Now(), false
	}
	if len(p.owners) == 0 {
		return nil
	}
	if ns == "" {
		ns = api.DefaultNamespace
	}
	return p.owners[api.ShardOf(ns, workflowID, len(p.owners))]
}

// readPlacement reads which node of s owns each shard, in one attempt on a
// live node (nil when it fails, or names no node of s).
func (s *Service) readPlacement(ctx context.Context) []*node {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	n := s.nodes.live()
	if n == nil {
		return nil
	}
	var p server.Placement
	if a := s.once(ctx, n, "GET", "/placement", nil, &p); a.err != nil {
		s.log.DebugContext(ctx, "remote: read the cluster's placement", "node", n.url, "err", a.err)
		return nil
	}
	byURL := map[string]*node{}
	s.nodes.mu.Lock()
	for _, nd := range s.nodes.list {
		byURL[nd.url] = nd
	}
	s.nodes.mu.Unlock()
	owners := make([]*node, len(p.Owners))
	known := false
	for i, addr := range p.Owners {
		if owners[i] = byURL[strings.TrimRight(addr, "/")]; owners[i] != nil {
			known = true
		}
	}
	if !known {
		return nil
	}
	return owners
}

// live returns the node that answered last while it is up, else any node
// that is up, else nil; unlike pick it counts no call.
func (ns *nodes) live() *node {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	now := time.Now()
	if ns.pref != nil && !now.Before(ns.pref.downUntil) {
		return ns.pref
	}
	for _, n := range ns.list {
		if !now.Before(n.downUntil) {
			return n
		}
	}
	return nil
}

// doAbout is do for a call about workflow id of namespace ns: its first
// attempt goes to the owner of the workflow's shard when it is known.
func (s *Service) doAbout(ctx context.Context, ns, workflowID string, may resend, method, path string, in, out any) (bool, error) {
	return s.sendOn(ctx, s.owner(ctx, ns, workflowID), may, false, method, path, in, out)
}
