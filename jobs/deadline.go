package jobs

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file keeps a drain (one worker Lambda invocation) from starting a
// step that cannot finish before its CancelAt, and gives protected time to
// a job that deadlines interrupted several times in a row. Outside a drain
// (gb worker, gb dev: no CancelAt) none of it applies.
//
// A step is expected to take the recent p95 of the step durations of its
// model in this process (the agent keeps them, fed by the steps that commit
// in its drains), capped at StepTimeout (StepTimeout itself until the model
// has minStepSamples). A drain starts a step, the first of a job
// or a further one, only when that much time is left before CancelAt. A job
// whose step may not start goes back to the queue at once without spending
// an attempt (a snooze), is not counted as interrupted, and makes the drain
// stop fetching: the jobs after it would not fit either.
//
// A job's consecutive deadline interruptions are counted in its River
// metadata (InterruptionsKey); a committed step resets the count. From
// ProtectAfter on the job is protected: a drain starts its steps only when
// the whole StepTimeout, which bounds a step, fits before CancelAt, so that
// the job is left for an invocation that has just begun; and it is queued
// ahead of every other step job, so that such an invocation takes it first.

const (
	// ProtectAfter is how many deadline interruptions in a row make a job
	// protected.
	ProtectAfter = 3
	// InterruptionsKey is the River job metadata key that counts a job's
	// consecutive deadline interruptions.
	InterruptionsKey = "gb_deadline_interruptions"
	// stepSamples is the length of each model's ring of recent step
	// durations, and minStepSamples how many its p95 needs.
	stepSamples    = 20
	minStepSamples = 5
)

// deadlines is what an agent knows of the drain it runs, if any, and of
// the recent durations of its steps.
type deadlines struct {
	mu       sync.Mutex
	cancelAt time.Time             // the running drain's; zero outside a drain
	recent   map[string]*durations // by model
	open     map[int64]openStep    // the step each job of the drain is making, by job id
	deferred int                   // jobs of the drain put back unstarted
	front    []int64               // the protected ones among them
	full     chan struct{}         // a job could not start: the drain stops fetching
}

// openStep is a step a job of the drain started.
type openStep struct {
	turn  *turn
	model string
	at    time.Time
	// interruptions is the job's count as its attempt sees it: 0 once one
	// of its steps committed.
	interruptions int
}

// durations is a ring of recent step durations.
type durations struct {
	ring [stepSamples]time.Duration
	n    int // samples held
	next int // where the next one goes
}

func (r *durations) add(d time.Duration) {
	r.ring[r.next] = d
	r.next = (r.next + 1) % stepSamples
	r.n = min(r.n+1, stepSamples)
}

// p95 is the 95th percentile of the samples (the nearest rank), and false
// while there are fewer than minStepSamples.
func (r *durations) p95() (time.Duration, bool) {
	if r == nil || r.n < minStepSamples {
		return 0, false
	}
	s := slices.Clone(r.ring[:r.n])
	slices.Sort(s)
	return s[(95*r.n+99)/100-1], true
}

// newDeadlines makes an agent's empty deadlines.
func newDeadlines() *deadlines {
	return &deadlines{recent: map[string]*durations{}}
}

// beginDrain sets the drain's CancelAt and returns the channel told when a
// job could not start.
func (d *deadlines) beginDrain(cancelAt time.Time) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cancelAt = cancelAt
	d.open = map[int64]openStep{}
	d.deferred, d.front = 0, nil
	d.full = make(chan struct{}, 1)
	return d.full
}

// endDrain forgets the drain and returns how many jobs it put back
// unstarted, and which of them are protected.
func (d *deadlines) endDrain() (deferred int, front []int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	deferred, front = d.deferred, d.front
	d.cancelAt, d.open, d.deferred, d.front = time.Time{}, nil, 0, nil
	return deferred, front
}

// expected is how long a step of model is expected to take.
func (d *deadlines) expected(model string, stepTimeout time.Duration) time.Duration {
	if p, ok := d.recent[model].p95(); ok {
		return min(p, stepTimeout)
	}
	return stepTimeout
}

// record adds a committed step's duration to its model's ring.
func (d *deadlines) record(model string, took time.Duration) {
	r := d.recent[model]
	if r == nil {
		r = &durations{}
		d.recent[model] = r
	}
	r.add(took)
}

// settled learns from a job the drain saw end: a completed job committed
// its last step (or ended its run), which took from its start until then.
func (d *deadlines) settled(ev *river.Event) {
	if ev == nil || ev.Job == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.open[ev.Job.ID]
	if !ok {
		return
	}
	delete(d.open, ev.Job.ID)
	if ev.Kind != river.EventKindJobCompleted {
		return
	}
	end := time.Now()
	if ev.Job.FinalizedAt != nil {
		end = *ev.Job.FinalizedAt
	}
	d.record(s.model, end.Sub(s.at))
}

// mayStart is called as a step starts, its run loaded. In a drain it
// returns a snooze, which puts the job back at once without spending an
// attempt, when the step cannot finish before CancelAt; when the job made a
// step before this one, it records that step's duration and resets the
// job's interruptions. Outside a drain it returns nil.
func (a *Service) mayStart(ctx context.Context, t *turn) error {
	d := a.deadlines
	model := a.modelFor(t.run).Name()
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancelAt.IsZero() {
		return nil
	}
	job := t.job
	n := interruptionsOf(job.Metadata)
	if prev, ok := d.open[job.ID]; ok && prev.turn == t {
		// The job's previous step committed.
		d.record(prev.model, now.Sub(prev.at))
		if prev.interruptions > 0 {
			if err := river.MetadataSet(ctx, InterruptionsKey, 0); err != nil {
				a.logger.WarnContext(ctx, "could not reset a job's interruptions", "job_id", job.ID, "err", err)
			}
		}
		n = 0
	}
	need := d.expected(model, a.config.StepTimeout)
	if n >= ProtectAfter {
		need = a.config.StepTimeout
	}
	if left := d.cancelAt.Sub(now); left < need {
		delete(d.open, job.ID)
		d.deferred++
		if n >= ProtectAfter {
			d.front = append(d.front, job.ID)
		}
		select {
		case d.full <- struct{}{}:
		default:
		}
		a.logger.InfoContext(ctx, "step put back: it cannot finish before the drain's deadline", "run_id", t.run.ID,
			"job_id", job.ID, "need", need, "left", left, "interruptions", n)
		return river.JobSnooze(0)
	}
	d.open[job.ID] = openStep{turn: t, model: model, at: now, interruptions: n}
	return nil
}

// nextStepFits reports whether, in a drain, the next step of the job's run
// is expected to finish before CancelAt; outside a drain it is true.
func (a *Service) nextStepFits(t *turn) bool {
	d := a.deadlines
	model := a.modelFor(t.run).Name()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancelAt.IsZero() || time.Until(d.cancelAt) >= d.expected(model, a.config.StepTimeout)
}

// noStepFits reports whether no step of any of the agent's models is
// expected to finish before CancelAt, so that a drain fetching more jobs
// would only put them back.
func (d *deadlines) noStepFits(models []llm.Model, stepTimeout time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	left := time.Until(d.cancelAt)
	for _, m := range models {
		if left >= d.expected(m.Name(), stepTimeout) {
			return false
		}
	}
	return true
}

// interruptionsOf reads a job's count of deadline interruptions from its
// metadata.
func interruptionsOf(metadata []byte) int {
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return 0
	}
	var n int
	if json.Unmarshal(m[InterruptionsKey], &n) != nil {
		return 0
	}
	return n
}
