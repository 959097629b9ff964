package fakeprovider_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/fakeprovider"
	"github.com/gbresearch/gb/jobs/llm"
)

func TestLimitsTakeAndRefill(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := fakeprovider.NewLimits(2, 100, t0)
	l.Take(60)
	if !l.RPM.Has(1) || l.TPM.Has(60) {
		t.Fatalf("after one call of 60 tokens: RPM has 1 %v, TPM has 60 %v", l.RPM.Has(1), l.TPM.Has(60))
	}
	if got := l.TPM.Remaining(); got != 40 {
		t.Errorf("TPM remaining %d, want 40", got)
	}
	if got := l.TPM.Used(); got != 60 {
		t.Errorf("TPM used %d, want 60", got)
	}
	if got := l.TPM.Wait(60); got != 12*time.Second {
		t.Errorf("wait for 60 of 100 a minute with 40 left: %v, want 12s", got)
	}
	l.Refill(t0.Add(12 * time.Second))
	if !l.TPM.Has(60) {
		t.Errorf("TPM does not hold 60 once the wait has passed (remaining %d)", l.TPM.Remaining())
	}
	l.Refill(t0.Add(time.Hour))
	if l.TPM.Remaining() != 100 || l.RPM.Remaining() != 2 {
		t.Errorf("refilled past the limit: TPM %d, RPM %d", l.TPM.Remaining(), l.RPM.Remaining())
	}
	if none := fakeprovider.NewLimits(0, 0, t0); none.RPM != nil || none.TPM != nil {
		t.Errorf("limits of 0 are set: %+v", none)
	}
}

type call struct{ u llm.Usage }

func (c call) Usage() llm.Usage { return c.u }

func TestMeterCountsAndBills(t *testing.T) {
	var m fakeprovider.Meter[int, call]
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Enter()
	m.Enter()
	m.Leave()
	m.Enter()
	m.Accept(30, t0.Add(time.Minute))
	m.Accept(20, t0)
	m.Bill(call{llm.Usage{PromptTokens: 10, CachedPromptTokens: 4, CompletionTokens: 5, CostUSD: 0.5}})
	m.Bill(call{llm.Usage{PromptTokens: 1, CacheWriteTokens: 1, CompletionTokens: 2, ReasoningTokens: 1, CostUSD: 0.25}})
	m.Note(func(refusals *int) { *refusals += 3 })
	c, refusals := m.Read()
	want := fakeprovider.Counts{Requests: 3, MaxInFlight: 2, Billed: 2, TPMUsed: 50, FirstAccepted: t0,
		LastAccepted: t0.Add(time.Minute), Usage: llm.Usage{PromptTokens: 11, CachedPromptTokens: 4,
			CacheWriteTokens: 1, CompletionTokens: 7, ReasoningTokens: 1, CostUSD: 0.75}}
	if c != want {
		t.Errorf("counts\n got %+v\nwant %+v", c, want)
	}
	if refusals != 3 {
		t.Errorf("tally %d, want 3", refusals)
	}
	if calls := m.Calls(); len(calls) != 2 || calls[1].u.CompletionTokens != 2 {
		t.Errorf("calls %+v, want the two billed in order", calls)
	}
}

func TestCloseEndsSleeps(t *testing.T) {
	s := fakeprovider.Start(http.NotFoundHandler())
	if !s.Sleep(context.Background(), 0) {
		t.Errorf("a sleep of 0 did not complete")
	}
	woke := make(chan bool)
	go func() { woke <- s.Sleep(context.Background(), time.Hour) }()
	s.Close()
	if <-woke {
		t.Errorf("Sleep reported a full wait though the server closed")
	}
	select {
	case <-s.Done():
	default:
		t.Errorf("Done is open after Close")
	}
	s.Close() // a second Close is harmless
}
