package jobs

import (
	"context"
	"time"
)

// This file starts and stops what runs beside the River client while a
// process works jobs: it takes the liveness lock (liveness.go) that tells
// other processes this one is alive, and runs the loop that calls a
// maintenance pass (maintain.go) every Config.MaintainInterval.

// working is what begin started and end stops.
type working struct {
	// handoverAt, when set, is when running step jobs stop making further
	// steps of their runs and hand them over to new jobs (a drain's
	// StopFetchingAt).
	handoverAt time.Time
	live       *liveness
	cancel     context.CancelFunc
	done       chan struct{}
}

// begin takes the liveness lock and starts the maintenance loop (unless
// the agent is a guest); it must come before the River client starts.
func (a *Service) begin(ctx context.Context) error {
	if err := a.rate.sync(ctx, a.pool); err != nil {
		return err
	}
	live, err := a.holdLiveness(ctx)
	if err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &working{live: live, cancel: cancel, done: make(chan struct{})}
	if a.config.Guest {
		close(w.done) // others maintain the database
	} else {
		go a.maintainLoop(mctx, w.done)
	}
	a.mu.Lock()
	a.working = w
	a.mu.Unlock()
	return nil
}

// end stops the maintenance loop and gives the liveness lock up; it must
// come after the River client stopped.
func (a *Service) end() {
	a.mu.Lock()
	w := a.working
	a.working = nil
	a.mu.Unlock()
	if w == nil {
		return
	}
	w.cancel()
	<-w.done
	w.live.release()
}

// maintainLoop runs Maintain until ctx ends; another process maintaining
// at the same moment makes a pass skip, which is fine.
func (a *Service) maintainLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(a.config.MaintainInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		mctx, cancel := context.WithTimeout(ctx, max(a.config.MaintainInterval, 5*time.Second))
		res, err := a.Maintain(mctx, MaintainParams{})
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			a.logger.WarnContext(ctx, "maintenance pass failed; the next one tries again", "err", err)
		case res.DeadWorkers+res.Repaired+res.Lost+res.Resumed+res.Discarded > 0:
			a.logger.InfoContext(ctx, "maintenance repaired the queue", "dead_workers", res.DeadWorkers,
				"rescued", res.Rescued, "discarded", res.Discarded, "repaired", res.Repaired, "lost", res.Lost, "resumed", res.Resumed)
		}
	}
}
