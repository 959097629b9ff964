package messenger

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestChanWaitWakesOnSendAndCloseWithoutTaking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := NewChanMessenger()
	if err := c.Open(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Wait(ctx, 1, 20*time.Millisecond); ok || err != nil {
		t.Fatalf("empty inbox: %v %v", ok, err)
	}
	done := make(chan bool)
	go func() {
		ok, _ := c.Wait(ctx, 1, longWait)
		done <- ok
	}()
	time.Sleep(20 * time.Millisecond)
	if err := SendMessage(ctx, c, Message{To: 1, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("woken without a message")
		}
	case <-time.After(receiverGuard):
		t.Fatal("a send did not wake the waiter")
	}
	if msgs, _ := c.Receive(ctx, 1, 0); len(msgs) != 1 {
		t.Fatalf("Wait took the message: %d left", len(msgs))
	}
	errc := make(chan error)
	go func() {
		_, err := c.Wait(ctx, 1, longWait)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := c.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrNoInbox) {
			t.Fatalf("closed inbox: %v", err)
		}
	case <-time.After(receiverGuard):
		t.Fatal("a close did not wake the waiter")
	}
}
