package engine

import (
	"hash/fnv"
	"sort"
	"strconv"
)

// Shard placement for several nodes over one store (issue 6): each shard
// belongs to the live node with the highest rendezvous score for it, so a
// node that joins takes about 1/n of the shards from the others and a node
// that leaves spreads its shards over the rest; no other shard moves.

// shardOwner returns the node that should own shard among nodes ("" when
// there is none).
func shardOwner(shard int32, nodes []string) string {
	best, bestScore := "", uint64(0)
	for _, n := range nodes {
		if s := rendezvousScore(shard, n); best == "" || s > bestScore || (s == bestScore && n < best) {
			best, bestScore = n, s
		}
	}
	return best
}

func rendezvousScore(shard int32, node string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(int(shard))))
	// FNV's low bits mix poorly for short inputs: finish with a 64-bit mixer.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// placementChange says what node self must do so that it owns exactly the
// shards placement gives it: acquire the ones it lacks, release the ones it
// holds that now belong to another node. Both lists are sorted.
func placementChange(self string, numShards int, nodes []string, owned map[int32]bool) (acquire, release []int32) {
	for s := range int32(numShards) {
		mine := shardOwner(s, nodes) == self
		switch {
		case mine && !owned[s]:
			acquire = append(acquire, s)
		case !mine && owned[s]:
			release = append(release, s)
		}
	}
	sort.Slice(acquire, func(i, j int) bool { return acquire[i] < acquire[j] })
	sort.Slice(release, func(i, j int) bool { return release[i] < release[j] })
	return acquire, release
}
