package message

import (
	"os"
	"testing"
	"time"
)

// TestMain checks the waiting runs every 500ms, not every hour, so that a
// test sees the waits of runs closed from outside go without waiting
// long for it.
func TestMain(m *testing.M) {
	checkEvery = 500 * time.Millisecond
	os.Exit(m.Run())
}
