// Package messenger carries short text messages between agents, addressed by
// run ID. It knows nothing of agents, names or siblings: who may write to whom
// is decided by the caller.
//
// It holds the Messenger interface, SendMessage (the single path every send
// goes through), an in-memory implementation (NewChanMessenger) and a Postgres
// one (NewPostgres) whose messages are rows that stay after they are read,
// and whose blocked receivers are woken by LISTEN/NOTIFY through one shared
// Listener connection per process. NOTIFY is only a wake-up: receivers always
// read the table (Receive on each wake-up; a caller of Wait with ReceiveTx
// right after), and re-check it on a fallback timer, so a lost notification
// costs latency and never a message. MeasureWake times that wake-up beside
// a bare LISTEN/NOTIFY round trip.
//
// This package imports nothing of the project (its tests may use
// infra/dbtest).
package messenger
