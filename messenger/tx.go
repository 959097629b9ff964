package messenger

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// InTx returns a Messenger whose every call runs inside tx, so that opening,
// closing, sending and receiving commit or roll back with the caller's
// work. Its Receive never waits: wait first with Wait, outside the
// transaction, then receive in it.
func (p *Postgres) InTx(tx pgx.Tx) Messenger { return &txMessenger{p: p, tx: tx} }

type txMessenger struct {
	p  *Postgres
	tx pgx.Tx
}

func (t *txMessenger) Open(ctx context.Context, id int64) error  { return t.p.OpenTx(ctx, t.tx, id) }
func (t *txMessenger) Close(ctx context.Context, id int64) error { return t.p.CloseTx(ctx, t.tx, id) }

func (t *txMessenger) Send(ctx context.Context, m Message) error {
	_, err := t.p.SendTx(ctx, t.tx, &SendParams{To: m.To, From: m.From, FromName: m.FromName, Text: m.Text, SentAt: m.SentAt})
	return err
}

func (t *txMessenger) Receive(ctx context.Context, id int64, _ time.Duration) ([]Message, error) {
	return t.p.ReceiveTx(ctx, t.tx, id)
}
