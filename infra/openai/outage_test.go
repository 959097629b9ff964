package openai_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/fakeprovider"
	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs/llm"
)

// transient checks that err is a transient *llm.CallError and nothing else.
func transient(t *testing.T, what string, err error) {
	t.Helper()
	var ce *llm.CallError
	if !errors.As(err, &ce) || !errors.Is(err, llm.ErrTransient) {
		t.Fatalf("%s: %v (%T), want a transient *llm.CallError", what, err, err)
	}
	for _, s := range []error{llm.ErrPermanent, llm.ErrRateLimited, llm.ErrContextLength, llm.ErrTooLarge, llm.ErrUnusable} {
		if errors.Is(err, s) {
			t.Errorf("%s: %v is also %v", what, err, s)
		}
	}
}

func request() llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Tidal power?"}}}
}

// Every way a provider is down, as the fake's outage switch plays it, is a
// transient failure: 503, 529 "overloaded", a dropped connection, and a
// hang the caller gave up on.
func TestOutageModesAreTransient(t *testing.T) {
	t.Parallel()
	fake := openaifake.New(openaifake.Config{})
	t.Cleanup(fake.Close)
	m, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: openaifake.DefaultAPIKey, Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range fakeprovider.OutageModes {
		if err := fake.StartOutage(mode, 0); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := m.Complete(ctx, request())
		cancel()
		transient(t, string(mode), err)
	}
	fake.EndOutage()
	if _, err := m.Complete(context.Background(), request()); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
	if st := fake.Stats(); st.Outage != len(fakeprovider.OutageModes) || st.Billed != 1 {
		t.Errorf("stats %+v: want one request failed by each mode and one billed", st)
	}
}

// A provider that cannot be reached at all (connection refused, a name
// that does not resolve) is a transient failure too.
func TestUnreachableProviderIsTransient(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/v1"
	_ = l.Close() // nothing listens there now
	for what, base := range map[string]string{"connection refused": refused, "DNS": "http://gb-provider.invalid/v1"} {
		m, err := openai.New(openai.Config{BaseURL: base, APIKey: "sk-x", Model: "gpt-4o-mini",
			HTTPClient: &http.Client{Timeout: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Complete(context.Background(), request())
		transient(t, what, err)
	}
}
