package engine

import (
	"context"
	"time"
)

// SetPurgeKnobs sets the options' test knobs for the retention purge (for
// package engine_test): retentionOf replaces namespaces' retention for the
// runs that close from then on; hook runs before each purger reads its due
// timers; due timers are read at once, without purgeSettle.
func SetPurgeKnobs(o *Options, retentionOf func(namespace string) (time.Duration, bool), hook func(ctx context.Context, shardID int32)) {
	o.retentionOf, o.purgeHook, o.purgeSettle = retentionOf, hook, time.Nanosecond
}

// RetentionPartition is the timer queue partition of retention timers.
const RetentionPartition = retentionPartition
