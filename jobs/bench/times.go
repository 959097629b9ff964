package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// StepKey names one step of one run, or one hop of one River chain.
type StepKey struct {
	ID   int64
	Step int
}

// StepTimes is a jobs.Observer that records when each step starts and
// commits. The River workers of this package record into it the same way,
// with the chain number as the id and the hop as the step.
type StepTimes struct {
	mu        sync.Mutex
	started   map[StepKey]time.Time
	committed map[StepKey]time.Time
	waiters   []commitWaiter
	onCommit  func(id int64, step int)
}

// commitWaiter is closed once n steps have committed.
type commitWaiter struct {
	n    int
	done chan struct{}
}

// NewStepTimes returns an empty StepTimes. onCommit, when not nil, is
// called after each commit is recorded, outside the lock.
func NewStepTimes(onCommit func(id int64, step int)) *StepTimes {
	return &StepTimes{started: map[StepKey]time.Time{}, committed: map[StepKey]time.Time{}, onCommit: onCommit}
}

// StepStarted records the start of a step.
func (s *StepTimes) StepStarted(id int64, step int, at time.Time) {
	s.mu.Lock()
	s.started[StepKey{id, step}] = at
	s.mu.Unlock()
}

// StepCommitted records the commit of a step.
func (s *StepTimes) StepCommitted(id int64, step int, at time.Time) {
	s.mu.Lock()
	s.committed[StepKey{id, step}] = at
	n := len(s.committed)
	keep := s.waiters[:0]
	for _, w := range s.waiters {
		if n >= w.n {
			close(w.done)
		} else {
			keep = append(keep, w)
		}
	}
	s.waiters = keep
	s.mu.Unlock()
	if s.onCommit != nil {
		s.onCommit(id, step)
	}
}

// Reset forgets every recorded time.
func (s *StepTimes) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.started)
	clear(s.committed)
}

// Commits is how many steps have committed since the last Reset.
func (s *StepTimes) Commits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.committed)
}

// StartedAt is when a step started.
func (s *StepTimes) StartedAt(id int64, step int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.started[StepKey{id, step}]
	return t, ok
}

// CommittedAt is when a step committed.
func (s *StepTimes) CommittedAt(id int64, step int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.committed[StepKey{id, step}]
	return t, ok
}

// WaitCommits waits until n steps have committed. It gives up when no step
// commits for stall, or when ctx ends.
func (s *StepTimes) WaitCommits(ctx context.Context, n int, stall time.Duration) error {
	s.mu.Lock()
	if len(s.committed) >= n {
		s.mu.Unlock()
		return nil
	}
	w := commitWaiter{n: n, done: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	last := -1
	tick := time.NewTicker(stall)
	defer tick.Stop()
	for {
		select {
		case <-w.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d steps to commit: %w", n, ctx.Err())
		case <-tick.C:
			got := s.Commits()
			if got == last {
				return fmt.Errorf("no step committed for %s: %d of %d committed (a run failed or stalled)", stall, got, n)
			}
			last = got
		}
	}
}

// ChainStats are the timings of a set of runs (or chains) of steps.
type ChainStats struct {
	// Steps counts the committed steps.
	Steps int
	// Wall runs from the begin given to Stats to the last commit.
	Wall time.Duration
	// Work is StepStarted to StepCommitted of each step.
	Work []time.Duration
	// Pickup is StepCommitted of step n to StepStarted of step n+1, for
	// the steps n+1 that started a job of their own.
	Pickup []time.Duration
	// Next is the same for the steps n+1 that ran in the job of step n.
	Next []time.Duration
}

// PerSecond is the rate of committed steps over the wall time.
func (c ChainStats) PerSecond() float64 {
	if c.Wall <= 0 {
		return 0
	}
	return float64(c.Steps) / c.Wall.Seconds()
}

// Stats gathers the timings recorded since begin. queued, when not nil,
// says which steps started a job of their own (went through the queue):
// their pickups are Pickup, the others' Next. Nil puts every pickup in
// Pickup.
func (s *StepTimes) Stats(begin time.Time, queued func(StepKey) bool) ChainStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c ChainStats
	var last time.Time
	for k, done := range s.committed {
		c.Steps++
		if done.After(last) {
			last = done
		}
		if st, ok := s.started[k]; ok {
			c.Work = append(c.Work, done.Sub(st))
		}
		next := StepKey{k.ID, k.Step + 1}
		st, ok := s.started[next]
		switch {
		case !ok:
		case queued == nil || queued(next):
			c.Pickup = append(c.Pickup, st.Sub(done))
		default:
			c.Next = append(c.Next, st.Sub(done))
		}
	}
	c.Wall = last.Sub(begin)
	return c
}

// Pct is the p-th percentile (0 < p <= 1) of ds by nearest rank; 0 for none.
func Pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
