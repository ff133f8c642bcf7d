//go:build !race

package server_test

// abandonedQueries is how many 4 MB queries TestQueryClientLeaves abandons.
const abandonedQueries = 100
