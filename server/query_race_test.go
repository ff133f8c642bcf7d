//go:build race

package server_test

// abandonedQueries is how many 4 MB queries TestQueryClientLeaves
// abandons: fewer under the race detector, which makes decoding their JSON
// (400 MB at 100) take minutes.
const abandonedQueries = 10
