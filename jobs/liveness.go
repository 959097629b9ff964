package jobs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5"
)

// This file tells a dead worker by its liveness rather than by the age of
// its jobs: while its River client runs, each worker process holds a
// session-level advisory lock named by the client's id, on a connection of
// its own. A process that dies loses its connection and so its lock, and
// the maintenance pass of any other process rescues its running jobs at
// once (maintain.go), whatever the step timeout.

// livenessLockSpace is the first key of the liveness locks; the second is
// the hash of the River client id.
const livenessLockSpace = 7_411_100

// Timing of a liveness lock's connection.
const (
	livenessPing       = 2 * time.Second
	livenessRetryFirst = 200 * time.Millisecond
	livenessRetryMax   = 5 * time.Second
	// livenessGrace is how long a job must have been running before its
	// worker's liveness is checked.
	livenessGrace = 2 * time.Second
)

// LivenessConfirm is how long a worker's liveness lock must stay free
// before the worker is taken for dead.
const LivenessConfirm = 3 * time.Second

// liveness holds a worker's liveness lock until released.
type liveness struct {
	a      *Service
	id     string
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	conn *pgx.Conn
}

// holdLiveness takes the liveness lock of the agent's River client before
// the client starts taking jobs, and keeps it, reconnecting when the
// database drops the connection, until release.
func (a *Service) holdLiveness(ctx context.Context) (*liveness, error) {
	l := &liveness{a: a, id: a.river.ID(), done: make(chan struct{})}
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	l.conn = conn
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	go l.keep(lctx)
	return l, nil
}

// connect opens a connection outside the pool and takes the lock on it.
func (l *liveness) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.a.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("error connecting for the liveness lock: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, hashtext($2))", livenessLockSpace, l.id); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("error taking the liveness lock: %w", err)
	}
	return conn, nil
}

// keep pings the lock's connection and, when it is lost, reconnects with
// backoff, logging the loss once and the recovery once.
func (l *liveness) keep(ctx context.Context) {
	defer close(l.done)
	tick := time.NewTicker(livenessPing)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l.mu.Lock()
		conn := l.conn
		l.mu.Unlock()
		pctx, cancel := context.WithTimeout(ctx, livenessPing)
		err := conn.Ping(pctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			continue
		}
		l.a.logger.WarnContext(ctx, "lost the liveness lock's connection; reconnecting", "client_id", l.id, "err", err)
		_ = conn.Close(context.WithoutCancel(ctx))
		if !l.reconnect(ctx) {
			return
		}
		l.a.logger.InfoContext(ctx, "liveness lock held again", "client_id", l.id)
	}
}

// livenessWaits are the waits before each try to take the lock again:
// from livenessRetryFirst doubling up to livenessRetryMax, without jitter
// (one process, one connection).
func livenessWaits() *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{InitialInterval: livenessRetryFirst, Multiplier: 2, MaxInterval: livenessRetryMax}
	b.Reset()
	return b
}

// reconnect tries to take the lock again until it has it or ctx ends,
// after each of livenessWaits.
func (l *liveness) reconnect(ctx context.Context) bool {
	wait := livenessWaits()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait.NextBackOff()):
		}
		conn, err := l.connect(ctx)
		if err == nil {
			l.mu.Lock()
			l.conn = conn
			l.mu.Unlock()
			return true
		}
	}
}

// release gives the lock up (closing its connection) once the River
// client has stopped.
func (l *liveness) release() {
	if l == nil {
		return
	}
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.conn.Close(ctx)
}

// deadWorkers returns which of the River clients named in ids hold no
// liveness lock, and have held none for LivenessConfirm: a live worker
// whose lock's connection the database dropped (a restart) takes it again
// within that time. Each lock it finds free it holds until tx ends, so that
// a worker reconnecting meanwhile waits for the rescue to commit. This
// process's own client is never dead.
func (a *Service) deadWorkers(ctx context.Context, tx pgx.Tx, ids []string) ([]string, error) {
	now := time.Now()
	free := map[string]bool{}
	for _, id := range ids {
		if id == a.river.ID() {
			continue
		}
		var ok bool
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1, hashtext($2))", livenessLockSpace, id).Scan(&ok); err != nil {
			return nil, fmt.Errorf("error checking the liveness of worker %s: %w", id, err)
		}
		free[id] = ok
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.suspects == nil {
		a.suspects = map[string]time.Time{}
	}
	var dead []string
	for id, since := range a.suspects {
		if !free[id] {
			delete(a.suspects, id)
		} else if now.Sub(since) >= LivenessConfirm {
			dead = append(dead, id)
			delete(a.suspects, id)
		}
	}
	for id, ok := range free {
		if _, known := a.suspects[id]; ok && !known && !slices.Contains(dead, id) {
			a.suspects[id] = now
		}
	}
	return dead, nil
}
