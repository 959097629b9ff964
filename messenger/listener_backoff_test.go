package messenger

import (
	"testing"
	"time"
)

// TestReconnectWaits: the waits before reconnecting double from
// backoffMin up to backoffMax, each within ±20% of its step, and start
// again from backoffMin after a reset.
func TestReconnectWaits(t *testing.T) {
	t.Parallel()
	l := &Listener{backoffMin: 100 * time.Millisecond, backoffMax: 2 * time.Second}
	steps := []time.Duration{100, 200, 400, 800, 1600, 2000, 2000} // ms
	for round := range 200 {
		b := l.reconnectWaits()
		for i, step := range steps {
			step *= time.Millisecond
			lo, hi := step-step/5, step+step/5+1
			if d := b.NextBackOff(); d < lo || d > hi {
				t.Fatalf("round %d, wait %d: %s, want within [%s, %s]", round, i+1, d, lo, hi)
			}
		}
		b.Reset()
		if d := b.NextBackOff(); d < 80*time.Millisecond || d > 120*time.Millisecond {
			t.Fatalf("after a reset: %s, want about 100ms", d)
		}
	}
}
