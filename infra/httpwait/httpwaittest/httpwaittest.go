// Package httpwaittest records the waits a retrier asks for, in place of
// httpwait.Sleep, so that tests check the wait the code chose rather than
// the time that passed.
//
// It imports nothing of the project.
package httpwaittest

import (
	"context"
	"sync"
	"time"
)

// Waits stands for the wait between two attempts of a retrier. Each wait
// is taken with Then (nil: none is taken, and the wait answers whether ctx
// is still live); Waits records how long it was asked to wait and whether
// the wait was taken in full.
type Waits struct {
	Then func(ctx context.Context, d time.Duration) bool

	mu    sync.Mutex
	asked []time.Duration
	took  []bool
}

// Sleep has the signature of httpwait.Sleep.
func (w *Waits) Sleep(ctx context.Context, d time.Duration) bool {
	ok := ctx.Err() == nil
	if w.Then != nil {
		ok = w.Then(ctx, d)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked = append(w.asked, d)
	w.took = append(w.took, ok)
	return ok
}

// All returns the waits asked for so far and whether each was taken.
func (w *Waits) All() ([]time.Duration, []bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.asked...), append([]bool(nil), w.took...)
}
