// Command strand is Strand's single binary: the server, the CLI and the
// store's schema tool.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/strandhq/strand/store"
)

func main() {
	// The engine keeps many small, short-lived objects; collecting at 4x the
	// live heap instead of 2x costs memory it has and saves a fifth of its
	// CPU. GOGC, when set, wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	// So that 4x does not grow the heap past what the node means to hold,
	// a soft limit makes the collector run sooner as the heap nears it;
	// the commands that run an engine or a worker raise it to their caches'
	// budgets plus headroom (setMemoryLimit). GOMEMLIMIT, when set, wins.
	setMemoryLimit(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "strand:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is 2 for bad input (flags, arguments, configuration), 1 for
// everything else.
func exitCode(err error) int {
	var usage *usageError
	if errors.As(err, &usage) || errors.Is(err, store.ErrInvalidArgument) {
		return 2
	}
	return 1
}

// usageError marks an error in how the command was called.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// memoryHeadroom is what the process may hold beyond its caches' budgets
// before the collector runs more often: requests, batches, the store
// driver's buffers, goroutines.
const memoryHeadroom = 512 << 20

// setMemoryLimit sets the Go runtime's soft memory limit to caches bytes
// plus memoryHeadroom, unless GOMEMLIMIT is set.
func setMemoryLimit(caches int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(caches + memoryHeadroom)
	}
}
