package jobs

import (
	"slices"
	"testing"
	"time"
)

// TestLivenessWaits: the waits before taking the liveness lock again
// double from 200ms up to 5s, exactly, and start over after a reset.
func TestLivenessWaits(t *testing.T) {
	t.Parallel()
	b := livenessWaits()
	var got []time.Duration
	for range 8 {
		got = append(got, b.NextBackOff())
	}
	ms := time.Millisecond
	want := []time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
	if b.Reset(); b.NextBackOff() != livenessRetryFirst {
		t.Errorf("after a reset the wait is not %s", livenessRetryFirst)
	}
}
