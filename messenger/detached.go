package messenger

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Detached serves a message system that lives outside Postgres (in
// memory, a broker) to the agent, whose steps hand it their transaction:
// it ignores the transaction. What such a system cannot promise, it does
// not: a send is done when the tool runs, before the step commits, so a
// step that is retried sends again; messages taken by a step whose commit
// then fails are lost; and the transcript (GET …/messages), which is the
// Postgres table, stays empty.
type Detached struct {
	m      Messenger
	waiter interface {
		Wait(ctx context.Context, id int64, wait time.Duration) (bool, error)
	}
}

// Waiter is a Messenger that can wait for a message without taking it.
type Waiter interface {
	Messenger
	Wait(ctx context.Context, id int64, wait time.Duration) (bool, error)
}

// Detach returns m as a messenger the agent can use.
func Detach(m Waiter) *Detached { return &Detached{m: m, waiter: m} }

// InTx returns the messenger itself: its calls do not join tx.
func (d *Detached) InTx(pgx.Tx) Messenger { return d.m }

// Wait waits for a message in the inbox of id without taking it.
func (d *Detached) Wait(ctx context.Context, id int64, wait time.Duration) (bool, error) {
	return d.waiter.Wait(ctx, id, wait)
}
