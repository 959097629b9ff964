package jobs

import (
	"strings"
	"testing"
	"time"
)

// Bad outage settings are refused saying what is wrong; the defaults fill
// what is left out.
func TestOutageConfigIsValidated(t *testing.T) {
	t.Parallel()
	for _, o := range []OutageConfig{{Horizon: -time.Second}, {Threshold: -1},
		{BackoffBase: time.Minute, BackoffCap: time.Second}} {
		err := Config{Outage: o}.withDefaults().validate()
		if err == nil || !strings.Contains(err.Error(), "outage") {
			t.Errorf("%+v: %v, want an error about the outage settings", o, err)
		}
	}
	c := Config{}.withDefaults()
	if c.Outage.Horizon != OutageHorizonDefault || c.Outage.BackoffCap != OutageBackoffCapDefault ||
		c.Outage.Threshold != BreakerThresholdDefault || c.Outage.ProbeLease <= c.StepTimeout {
		t.Errorf("defaults %+v", c.Outage)
	}
}

// The backoff between tries doubles from the base up to the cap, drawn
// from zero up to it (full jitter).
func TestFullJitterStaysUnderItsBound(t *testing.T) {
	t.Parallel()
	base, limit := 100*time.Millisecond, time.Second
	for tries := 1; tries < 40; tries++ {
		bound := min(base<<min(tries-1, 30), limit)
		for range 50 {
			if d := fullJitter(base, limit, tries); d < 0 || d > bound {
				t.Fatalf("try %d: backoff %s, want 0 to %s", tries, d, bound)
			}
		}
	}
}
