package providerbench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// Every odd answer a provider gives is survived: retried (spending an
// attempt, counted in the ledger when billed) or told to the model at its
// next turn; the research ends with its report and the ledger counts what
// the provider billed.
func TestOddAnswersAreSurvived(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	faults := []openaifake.Fault{openaifake.EmptyChoices, openaifake.EmptyMessage, openaifake.Refusal,
		openaifake.NoToolCallID, openaifake.NULInContent, openaifake.NULInToolName, openaifake.InvalidUTF8,
		openaifake.ContentWithToolCalls, openaifake.CutArguments, openaifake.ServerError, openaifake.Overloaded,
		openaifake.Timeout, openaifake.Garbage}
	for _, f := range faults {
		t.Run(fmt.Sprint(f), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r, err := providerbench.OddAnswer(ctx, providerbench.OddOptions{Fault: f,
				EnvOptions: providerbench.EnvOptions{Pool: pool, Agent: jobs.Config{StepTimeout: 3 * time.Second}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s after %d steps %q; %d requests, %d billed; ledger %+v", r.Status, r.Steps, r.Error,
				r.Provider.Requests, r.Provider.Billed, r.Ledger)
			if r.Status != jobs.StatusSucceeded || !strings.Contains(r.Report, "Sources:") {
				t.Errorf("%s after %d steps: %q; want a report", r.Status, r.Steps, r.Error)
			}
			if f == openaifake.Timeout {
				// The call left and never came back: gb counts it at its
				// estimate, as one the provider may have billed.
				if r.Ledger.Estimated != 1 {
					t.Errorf("the call that timed out: %d estimated in the ledger, want 1", r.Ledger.Estimated)
				}
				return
			}
			checkLedger(t, r.Provider, r.Ledger)
		})
	}
}

// An odd answer repeated past the bound ends the run with a clear error,
// and every paid call is still counted.
func TestOddAnswersPastTheBoundEndTheRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := providerbench.OddAnswer(ctx, providerbench.OddOptions{Fault: openaifake.EmptyChoices,
		Times: jobs.StepMaxAttempts, EnvOptions: providerbench.EnvOptions{Pool: dbtest.NewPool(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != jobs.StatusFailed || !strings.Contains(r.Error, "unusable answer") {
		t.Errorf("%s %q: want the run failed on its unusable answers", r.Status, r.Error)
	}
	checkLedger(t, r.Provider, r.Ledger)
}
