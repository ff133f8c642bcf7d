package engine

import (
	"fmt"
	"testing"
)

func owners(numShards int, nodes []string) map[int32]string {
	out := map[int32]string{}
	for s := range int32(numShards) {
		out[s] = shardOwner(s, nodes)
	}
	return out
}

func TestPlacementIsBalancedAndMovesLittle(t *testing.T) {
	const shards = 256
	three := []string{"node-a", "node-b", "node-c"}
	before := owners(shards, three)
	count := map[string]int{}
	for _, n := range before {
		count[n]++
	}
	for _, n := range three {
		if c := count[n]; c < shards/3-30 || c > shards/3+30 {
			t.Errorf("%s owns %d of %d shards", n, c, shards)
		}
	}
	// A fourth node takes shards only for itself.
	after := owners(shards, append(three, "node-d"))
	moved := 0
	for s, n := range after {
		if n != before[s] {
			moved++
			if n != "node-d" {
				t.Fatalf("shard %d moved from %s to %s, not to the new node", s, before[s], n)
			}
		}
	}
	if moved < shards/4-30 || moved > shards/4+30 {
		t.Errorf("%d shards moved to the fourth node, want about %d", moved, shards/4)
	}
	// A node that leaves gives its shards away; nothing else moves.
	two := owners(shards, []string{"node-a", "node-c"})
	for s, n := range two {
		if before[s] != "node-b" && n != before[s] {
			t.Fatalf("shard %d moved from %s though its node stayed", s, before[s])
		}
	}
	if shardOwner(1, nil) != "" {
		t.Fatal("a shard has an owner among no nodes")
	}
}

func TestPlacementChange(t *testing.T) {
	nodes := []string{"a", "b"}
	owned := map[int32]bool{}
	for s := range int32(8) {
		owned[s] = true // a held everything while it was alone
	}
	acquire, release := placementChange("a", 8, nodes, owned)
	if len(acquire) != 0 {
		t.Fatalf("acquire %v", acquire)
	}
	for _, s := range release {
		if shardOwner(s, nodes) != "b" {
			t.Fatalf("released shard %d that is still a's", s)
		}
	}
	acquireB, _ := placementChange("b", 8, nodes, map[int32]bool{})
	if fmt.Sprint(acquireB) != fmt.Sprint(release) {
		t.Fatalf("b acquires %v, a releases %v", acquireB, release)
	}
}
