package httpwait

import (
	"context"
	"testing"
	"time"
)

// result runs Sleep in the background and returns what it answered; the
// timeout only guards against a Sleep that never returns.
func result(t *testing.T, ctx context.Context, d time.Duration) bool {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- Sleep(ctx, d) }()
	select {
	case ok := <-done:
		return ok
	case <-time.After(30 * time.Second):
		t.Fatalf("Sleep(%v) never returned", d)
		return false
	}
}

func TestSleepWaitsInFull(t *testing.T) {
	if !result(t, context.Background(), time.Millisecond) {
		t.Error("a wait with a live context was not taken in full")
	}
	if !result(t, context.Background(), 0) {
		t.Error("no wait with a live context answered false")
	}
}

func TestSleepRefusesAWaitPastTheDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if result(t, ctx, 2*time.Hour) {
		t.Error("a wait past the deadline answered true")
	}
	if ctx.Err() != nil {
		t.Errorf("Sleep returned with its context ended (%v): it waited for the deadline", ctx.Err())
	}
}

func TestSleepStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool, 1)
	go func() { done <- Sleep(ctx, time.Hour) }()
	cancel()
	select {
	case ok := <-done:
		if ok {
			t.Error("a cancelled wait answered true")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Sleep never returned after its context was cancelled")
	}
	if result(t, ctx, 0) {
		t.Error("no wait with a cancelled context answered true")
	}
}
