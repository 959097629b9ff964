package jobs

import (
	"testing"
	"time"
)

// RecordStepDurationsForTest adds n samples of took to the ring of model,
// as n committed steps of that model would.
func (a *Service) RecordStepDurationsForTest(model string, took time.Duration, n int) {
	d := a.deadlines
	d.mu.Lock()
	defer d.mu.Unlock()
	for range n {
		d.record(model, took)
	}
}

// ExpectedStepForTest is how long the agent expects a step of model to
// take in a drain.
func (a *Service) ExpectedStepForTest(model string) time.Duration {
	d := a.deadlines
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.expected(model, a.config.StepTimeout)
}

func TestExpectedStepDuration(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Second
	d := &deadlines{recent: map[string]*durations{}}
	if got := d.expected("m", timeout); got != timeout {
		t.Fatalf("no samples: expected %s, want StepTimeout", got)
	}
	for i := range minStepSamples - 1 {
		d.record("m", time.Duration(i+1)*time.Second)
	}
	if got := d.expected("m", timeout); got != timeout {
		t.Fatalf("%d samples: expected %s, want StepTimeout until there are %d", minStepSamples-1, got, minStepSamples)
	}
	d.record("m", 5*time.Second)
	if got := d.expected("m", timeout); got != 5*time.Second {
		t.Fatalf("samples 1s..5s: expected %s, want their p95, 5s", got)
	}
	// Twenty samples: 19 of 1s and one of 30s. The p95 is the 19th
	// smallest, and a ring keeps the last twenty only.
	for range stepSamples - 1 {
		d.record("m", time.Second)
	}
	d.record("m", 30*time.Second)
	if got := d.expected("m", timeout); got != time.Second {
		t.Fatalf("19 samples of 1s and one of 30s: expected %s, want 1s", got)
	}
	d.record("m", 30*time.Second)
	if got := d.expected("m", timeout); got != timeout {
		t.Fatalf("two slow samples in twenty: expected %s, want the p95 capped at StepTimeout", got)
	}
	if got := d.expected("other", timeout); got != timeout {
		t.Fatalf("another model's samples count for it: expected %s", got)
	}
}

func TestInterruptionsOf(t *testing.T) {
	t.Parallel()
	for meta, want := range map[string]int{
		`{}`:                                 0,
		`{"snoozes": 4}`:                     0,
		`{"gb_deadline_interruptions": 3}`:   3,
		`{"gb_deadline_interruptions": "x"}`: 0,
		``:                                   0,
	} {
		if got := interruptionsOf([]byte(meta)); got != want {
			t.Errorf("interruptionsOf(%q) = %d, want %d", meta, got, want)
		}
	}
}
