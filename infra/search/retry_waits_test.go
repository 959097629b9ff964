package search

import (
	"testing"
	"time"
)

// TestWaitsBetween: the waits of one request double from the base up to
// the cap, each within [d/2, d] of its step d.
func TestWaitsBetween(t *testing.T) {
	t.Parallel()
	steps := []time.Duration{500, 1000, 2000, 4000, 5000, 5000} // ms
	for range 500 {
		b := waitsBetween(BackoffBaseDefault, BackoffMaxDefault)
		for i, step := range steps {
			step *= time.Millisecond
			if d := b.NextBackOff(); d < step/2 || d > step+time.Nanosecond {
				t.Fatalf("wait %d: %s, want within [%s, %s]", i+1, d, step/2, step)
			}
		}
	}
}
