package messenger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runContract checks that the messenger made by newM keeps the Messenger
// contract. Each subtest gets a messenger of its own.
func runContract(t *testing.T, newM func(t *testing.T) Messenger) {
	t.Run("SendReceiveFields", func(t *testing.T) {
		m, ctx := newM(t), context.Background()
		mustOpen(t, m, 1)
		before := time.Now().UTC().Add(-time.Second)
		if err := SendMessage(ctx, m, Message{From: 7, FromName: "alpha", To: 1, Text: "hello"}); err != nil {
			t.Fatal(err)
		}
		msgs := receive(t, m, 1, 0)
		if len(msgs) != 1 {
			t.Fatalf("got %d messages, want 1", len(msgs))
		}
		g := msgs[0]
		if g.ID == 0 || g.From != 7 || g.FromName != "alpha" || g.To != 1 || g.Text != "hello" {
			t.Errorf("got %+v", g)
		}
		if g.SentAt.Before(before) || g.SentAt.After(time.Now().Add(time.Second)) || g.SentAt.Location() != time.UTC {
			t.Errorf("SentAt = %v, want about now in UTC", g.SentAt)
		}
		if g.ReadAt == nil {
			t.Error("ReadAt is nil after Receive")
		}
		if again := receive(t, m, 1, 0); len(again) != 0 {
			t.Errorf("second Receive got %d messages, want 0", len(again))
		}
	})

	t.Run("OpenIsIdempotent", func(t *testing.T) {
		m := newM(t)
		mustOpen(t, m, 1)
		mustSend(t, m, 1, "kept")
		mustOpen(t, m, 1)
		if got := texts(receive(t, m, 1, 0)); got != "kept" {
			t.Errorf("got %q, want the message sent before the second Open", got)
		}
	})

	t.Run("InboxesAreSeparate", func(t *testing.T) {
		m := newM(t)
		mustOpen(t, m, 1)
		mustOpen(t, m, 2)
		mustSend(t, m, 1, "to one")
		mustSend(t, m, 2, "to two")
		if got := texts(receive(t, m, 2, 0)); got != "to two" {
			t.Errorf("inbox 2 got %q", got)
		}
		if got := texts(receive(t, m, 1, 0)); got != "to one" {
			t.Errorf("inbox 1 got %q", got)
		}
	})

	t.Run("UnknownInbox", func(t *testing.T) {
		m, ctx := newM(t), context.Background()
		if err := SendMessage(ctx, m, Message{To: 999, Text: "x"}); !errors.Is(err, ErrNoInbox) {
			t.Errorf("Send to unknown inbox: %v, want ErrNoInbox", err)
		}
		for _, wait := range []time.Duration{0, 100 * time.Millisecond} {
			if _, err := m.Receive(ctx, 999, wait); !errors.Is(err, ErrNoInbox) {
				t.Errorf("Receive(wait %v) on unknown inbox: %v, want ErrNoInbox", wait, err)
			}
		}
	})

	t.Run("Close", func(t *testing.T) {
		m, ctx := newM(t), context.Background()
		mustOpen(t, m, 1)
		mustSend(t, m, 1, "unread")
		for range 2 { // idempotent
			if err := m.Close(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Close(ctx, 12345); err != nil {
			t.Errorf("Close of an unknown inbox: %v", err)
		}
		if err := SendMessage(ctx, m, Message{To: 1, Text: "late"}); !errors.Is(err, ErrNoInbox) {
			t.Errorf("Send after Close: %v, want ErrNoInbox", err)
		}
		if _, err := m.Receive(ctx, 1, 0); !errors.Is(err, ErrNoInbox) {
			t.Errorf("Receive after Close: %v, want ErrNoInbox", err)
		}
	})

	t.Run("FullAt64Unread", func(t *testing.T) {
		m, ctx := newM(t), context.Background()
		mustOpen(t, m, 1)
		for i := range InboxSize {
			mustSend(t, m, 1, strconv.Itoa(i))
		}
		if err := SendMessage(ctx, m, Message{To: 1, Text: "one too many"}); !errors.Is(err, ErrInboxFull) {
			t.Fatalf("send number %d: %v, want ErrInboxFull", InboxSize+1, err)
		}
		msgs := receive(t, m, 1, 0)
		if len(msgs) != InboxSize {
			t.Fatalf("got %d messages, want %d", len(msgs), InboxSize)
		}
		for i, g := range msgs { // oldest first
			if g.Text != strconv.Itoa(i) {
				t.Fatalf("message %d is %q: not oldest first", i, g.Text)
			}
		}
		mustSend(t, m, 1, "room again")
	})

	t.Run("ConcurrentSendsNeverExceedTheLimit", func(t *testing.T) {
		m, ctx := newM(t), context.Background()
		mustOpen(t, m, 1)
		var ok, full atomic.Int64
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				err := SendMessage(ctx, m, Message{To: 1, Text: strconv.Itoa(i)})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, ErrInboxFull):
					full.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if ok.Load() != InboxSize || full.Load() != 100-InboxSize {
			t.Errorf("%d sent, %d refused; want %d and %d", ok.Load(), full.Load(), InboxSize, 100-InboxSize)
		}
	})

	t.Run("EachMessageOnceUnderConcurrency", func(t *testing.T) {
		m := newM(t)
		mustOpen(t, m, 1)
		const senders, perSender, receivers = 8, 100, 4
		const total = senders * perSender
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var (
			mu       sync.Mutex
			seen     = make(map[string]int)
			received atomic.Int64
			wg       sync.WaitGroup
		)
		for s := range senders {
			wg.Go(func() {
				for i := 0; i < perSender; {
					err := SendMessage(ctx, m, Message{From: int64(s), To: 1, Text: fmt.Sprintf("%d-%d", s, i)})
					switch {
					case err == nil:
						i++
					case errors.Is(err, ErrInboxFull):
						time.Sleep(time.Millisecond)
					default:
						t.Errorf("sender %d: %v", s, err)
						return
					}
				}
			})
		}
		for range receivers {
			wg.Go(func() {
				for received.Load() < total && ctx.Err() == nil {
					msgs, err := m.Receive(ctx, 1, 100*time.Millisecond)
					if err != nil {
						t.Errorf("receiver: %v", err)
						return
					}
					last := make(map[int64]int) // per sender, within this batch
					mu.Lock()
					for _, g := range msgs {
						seen[g.Text]++
						n, _ := strconv.Atoi(strings.SplitN(g.Text, "-", 2)[1])
						if prev, ok := last[g.From]; ok && n <= prev {
							t.Errorf("batch has %q after %d-%d: not oldest first", g.Text, g.From, prev)
						}
						last[g.From] = n
					}
					mu.Unlock()
					received.Add(int64(len(msgs)))
				}
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			t.Fatalf("timed out with %d of %d received", received.Load(), total)
		}
		if len(seen) != total || received.Load() != total {
			t.Fatalf("%d distinct of %d received, want %d", len(seen), received.Load(), total)
		}
		for text, n := range seen {
			if n != 1 {
				t.Errorf("%q received %d times", text, n)
			}
		}
	})

	t.Run("BlockedReceiveWokenBySend", func(t *testing.T) {
		m := newM(t)
		mustOpen(t, m, 1)
		res := receiveGuarded(t, m, context.Background(), 1, longWait)
		time.Sleep(200 * time.Millisecond) // let the receiver block
		mustSend(t, m, 1, "wake up")
		requireWoken(t, <-res, "wake up", "the send")
	})

	t.Run("CancelDuringWait", func(t *testing.T) {
		m := newM(t)
		mustOpen(t, m, 1)
		ctx, cancel := context.WithCancel(context.Background())
		res := receiveAsync(m, ctx, 1, longWait)
		time.Sleep(200 * time.Millisecond) // let the receiver block
		cancel()
		select {
		case r := <-res:
			if !errors.Is(r.err, context.Canceled) {
				t.Fatalf("got %v, %v; want context.Canceled", r.msgs, r.err)
			}
		case <-time.After(receiverGuard):
			t.Fatal("Receive did not return after its context was cancelled")
		}
		if _, err := m.Receive(ctx, 1, 0); !errors.Is(err, context.Canceled) {
			t.Errorf("Receive with a cancelled context: %v", err)
		}
	})

	t.Run("WaitTimesOut", func(t *testing.T) {
		m := newM(t)
		mustOpen(t, m, 1)
		select {
		case r := <-receiveAsync(m, context.Background(), 1, 300*time.Millisecond):
			if r.err != nil || len(r.msgs) != 0 {
				t.Fatalf("got %v, %v from an empty inbox; want no messages and no error once the wait ends", r.msgs, r.err)
			}
		case <-time.After(receiverGuard):
			t.Fatal("a 300ms wait on an empty inbox never returned")
		}
		// The ended wait leaves the inbox working: a later message is there
		// for the next receive.
		mustSend(t, m, 1, "after the wait")
		if got := texts(receive(t, m, 1, 0)); got != "after the wait" {
			t.Errorf("got %q after the wait ended, want the message sent since", got)
		}
	})
}

func TestChanMessengerContract(t *testing.T) {
	runContract(t, func(*testing.T) Messenger { return NewChanMessenger() })
}

func TestPostgresContract(t *testing.T) {
	// A fallback longer than receiverGuard, so that a wake-up in time can
	// only come from NOTIFY.
	runContract(t, func(t *testing.T) Messenger {
		p, _, _ := newPostgres(t, PostgresConfig{FallbackInterval: longWait})
		return p
	})
}

type received struct {
	msgs []Message
	err  error
	at   time.Time
}

// receiverGuard bounds how long a test waits for a receiver. The tests
// that check what woke a receiver give it a wait and a fallback of
// longWait, far longer: only that wake-up can answer it within the guard.
const (
	receiverGuard = 20 * time.Second
	longWait      = time.Hour
)

// receiveGuarded is receiveAsync on a context that ends after
// receiverGuard: a receiver that nothing wakes ends with its error.
func receiveGuarded(t *testing.T, m Messenger, ctx context.Context, id int64, wait time.Duration) <-chan received {
	ctx, cancel := context.WithTimeout(ctx, receiverGuard)
	t.Cleanup(cancel)
	return receiveAsync(m, ctx, id, wait)
}

// requireWoken fails unless r is exactly the message text, without an
// error; by names what should have woken the receiver.
func requireWoken(t *testing.T, r received, text, by string) {
	t.Helper()
	if errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("%s did not wake the receiver: %v", by, r.err)
	}
	if r.err != nil || texts(r.msgs) != text {
		t.Fatalf("got %v, %v; want %q", r.msgs, r.err, text)
	}
}

func receiveAsync(m Messenger, ctx context.Context, id int64, wait time.Duration) <-chan received {
	res := make(chan received, 1)
	go func() {
		msgs, err := m.Receive(ctx, id, wait)
		res <- received{msgs, err, time.Now()}
	}()
	return res
}

func mustOpen(t *testing.T, m Messenger, id int64) {
	t.Helper()
	if err := m.Open(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

func mustSend(t *testing.T, m Messenger, to int64, text string) {
	t.Helper()
	if err := SendMessage(context.Background(), m, Message{To: to, Text: text}); err != nil {
		t.Fatal(err)
	}
}

func receive(t *testing.T, m Messenger, id int64, wait time.Duration) []Message {
	t.Helper()
	msgs, err := m.Receive(context.Background(), id, wait)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func texts(msgs []Message) string {
	s := make([]string, len(msgs))
	for i, m := range msgs {
		s[i] = m.Text
	}
	return strings.Join(s, ",")
}
