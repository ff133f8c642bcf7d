package message

import (
	"os"
	"testing"
	"time"
)

// TestMain checks the waiting runs every 2 s, not every hour, so that a
// test sees the waits of runs closed from outside go.
func TestMain(m *testing.M) {
	checkEvery = 2 * time.Second
	os.Exit(m.Run())
}
