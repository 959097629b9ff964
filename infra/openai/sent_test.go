package openai

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

// listen opens a loopback listener whose connections serve runs on.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = conn.Close() }()
				serve(conn)
			}()
		}
	}()
	return ln.Addr().String()
}

// readRequest reads one whole HTTP request from conn.
func readRequest(t *testing.T, conn net.Conn) {
	req, err := http.ReadRequest(bufio.NewReader(conn))
	if err != nil {
		t.Errorf("server: %v", err)
		return
	}
	_, _ = io.Copy(io.Discard, req.Body)
}

func modelAt(t *testing.T, addr string) *Model {
	t.Helper()
	return mustNew(t, Config{BaseURL: "http://" + addr + "/v1", APIKey: testKey, Model: "gpt-4o-mini",
		Logger: slog.New(slog.DiscardHandler)})
}

// A server that reads the whole request, then closes the connection
// without answering: the provider may have billed it, so Sent is true.
func TestCompleteSentWhenClosedAfterReading(t *testing.T) {
	addr := listen(t, func(conn net.Conn) { readRequest(t, conn) })
	_, err := modelAt(t, addr).Complete(context.Background(), simpleRequest())
	if ce := callError(t, err, llm.ErrTransient); !ce.Sent {
		t.Errorf("Sent is false for a request the server read whole: %v", err)
	}
}

// Nothing listens: the request never left, so Sent is false.
func TestCompleteNotSentWhenRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	_, err = modelAt(t, addr).Complete(context.Background(), simpleRequest())
	if ce := callError(t, err, llm.ErrTransient); ce.Sent {
		t.Errorf("Sent is true for a connection refused: %v", err)
	}
}

// The dial fails inside the HTTP client: not sent either.
func TestCompleteNotSentWhenTheDialFails(t *testing.T) {
	cfg := Config{BaseURL: "http://provider.invalid/v1", APIKey: testKey, Model: "gpt-4o-mini",
		Logger: slog.New(slog.DiscardHandler)}
	cfg.HTTPClient = &http.Client{Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("no route to provider")
		},
	}}
	_, err := mustNew(t, cfg).Complete(context.Background(), simpleRequest())
	if ce := callError(t, err, llm.ErrTransient); ce.Sent {
		t.Errorf("Sent is true for a failed dial: %v", err)
	}
}

// The caller gives up while the provider thinks: transient, its cause
// kept, and Sent true since the request was written.
func TestCompleteCancelledAfterSending(t *testing.T) {
	got := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	addr := listen(t, func(conn net.Conn) {
		readRequest(t, conn)
		close(got)
		<-release
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-got
		cancel()
	}()
	_, err := modelAt(t, addr).Complete(ctx, simpleRequest())
	ce := callError(t, err, llm.ErrTransient)
	if !errors.Is(err, context.Canceled) || !ce.Sent {
		t.Errorf("err = %v, sent %v; want context.Canceled and sent", err, ce.Sent)
	}
}

// A deadline already past: transient, DeadlineExceeded, never sent.
func TestCompleteDeadlineBeforeSending(t *testing.T) {
	api := newFakeAPI(t, reply{fixture: "answer.json"})
	m := mustNew(t, api.config("gpt-4o-mini"))
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	_, err := m.Complete(ctx, simpleRequest())
	ce := callError(t, err, llm.ErrTransient)
	if !errors.Is(err, context.DeadlineExceeded) || ce.Sent || api.count() != 0 {
		t.Errorf("err = %v, sent %v, %d requests; want DeadlineExceeded, not sent, none", err, ce.Sent, api.count())
	}
}
