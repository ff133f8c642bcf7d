//go:build race

package server_test

// abandonedQueries is how many 4 MB queries TestQueryClientLeaves
// abandons: fewer under the race detector, which makes decoding their JSON
// slow (100 take about 40 s on a 2-core machine). The engine's
// TestQueryAbandonedMemory abandons 100 in every run.
const abandonedQueries = 10
