package compact

import (
	"testing"
)

// The provider's count of a request's tokens (Scale) drifts from step to
// step within an eighth; the stubs of a research still only move forward.
func TestCutForwardAsScaleDrifts(t *testing.T) {
	reqs := requests(wordyResearch(45), 2048)
	var prev *Result
	back := 0
	for s, req := range reqs {
		cfg := Config{Window: 128000, MaxBudget: 40000, Scale: 1.21 - 0.02*float64((s*7)%5)}
		res := Fit(req, cfg, 0)
		if prev != nil {
			for i, old := range prev.Request.Messages {
				if !forward(old, res.Request.Messages[i]) {
					back++
				}
			}
		}
		prev = &res
	}
	if back > 0 {
		t.Errorf("%d messages went back as the scale drifted", back)
	}
}

// Scale is rounded up to an eighth before it divides the budget.
func TestBudgetScale(t *testing.T) {
	for scale, want := range map[float64]int{0: 111104, 1: 111104, 1.01: 98759, 1.125: 98759, 1.13: 88883} {
		if got := (Config{Window: 128000, Scale: scale}).Budget(4096, 0); got != want {
			t.Errorf("scale %v: budget %d, want %d", scale, got, want)
		}
	}
}
