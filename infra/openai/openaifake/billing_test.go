package openaifake

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/gbresearch/gb/jobs/llm"
)

func TestBillingAndCost(t *testing.T) {
	price := llm.Price{Input: 2, CachedInput: 0.5, Output: 8}
	srv, _ := start(t, Config{RPM: 3, Prices: map[string]llm.Price{"gpt-4o-mini": price}})
	system := words(1500, "abcd")
	body := func(q string) map[string]any {
		return map[string]any{"model": "gpt-4o-mini", "max_completion_tokens": 50, "messages": []any{
			map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": q}}}
	}
	// Questions of one token each, so that all prompts count the same.
	first := decodeCompletion(t, post(t, srv, testKey, body("uno")))
	second := decodeCompletion(t, post(t, srv, testKey, body("dos")))
	post(t, srv, testKey, chat("gpt-4o-mini", "hi", map[string]any{"temperature": 9})) // 400
	srv.Inject(ServerError, 1)
	post(t, srv, testKey, body("tre")) // 500, takes the last request of the minute
	post(t, srv, testKey, body("qua")) // 429

	if second.Usage.PromptTokensDetails.CachedTokens != 1408 {
		t.Fatalf("second call cached %d tokens, want 1408", second.Usage.PromptTokensDetails.CachedTokens)
	}
	got := srv.Stats()
	wantCost := price.Cost(llm.Usage{PromptTokens: first.Usage.PromptTokens, CompletionTokens: first.Usage.CompletionTokens}) +
		price.Cost(llm.Usage{PromptTokens: second.Usage.PromptTokens, CachedPromptTokens: 1408,
			CompletionTokens: second.Usage.CompletionTokens})
	if got.Requests != 5 || got.Billed != 2 || got.BadRequests != 1 || got.ServerErrors != 1 || got.Refused429RPM != 1 {
		t.Errorf("Stats = %+v, want 5 requests: 2 billed, a 400, a 500 and a 429", got)
	}
	if got.PromptTokens != first.Usage.PromptTokens+second.Usage.PromptTokens || got.CachedTokens != 1408 ||
		got.CompletionTokens != 2 || got.CostUSD != wantCost {
		t.Errorf("Stats = %+v, want the two calls' tokens costing %v", got, wantCost)
	}
	if got.TPMUsed != 3*(first.Usage.PromptTokens+50) {
		t.Errorf("TPMUsed = %d, want the 3 accepted calls' prompts and caps", got.TPMUsed)
	}
	calls := srv.Calls()
	if len(calls) != 2 || calls[1].CachedTokens != 1408 || calls[1].MaxCompletionTokens != 50 || calls[1].FinishReason != "stop" ||
		calls[1].Usage().CostUSD != price.Cost(calls[1].Usage()) {
		t.Errorf("Calls = %+v", calls)
	}
	var kinds []string
	for _, e := range srv.Log() {
		kinds = append(kinds, e.Kind)
	}
	want := []string{KindOK, KindOK, KindBadRequest, KindServerError, KindRPM}
	if len(kinds) != len(want) {
		t.Fatalf("Log kinds = %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("Log kinds = %v, want %v", kinds, want)
			break
		}
	}
}

// A call is billed once the server has decided its answer, even if the
// client leaves before reading it.
func TestBilledWhenClientLeaves(t *testing.T) {
	billed := make(chan struct{})
	latency := func(*Request, int) time.Duration {
		close(billed) // called after billing, before the wait
		return time.Hour
	}
	srv, _ := start(t, Config{LatencyFunc: latency})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := client(srv, testKey).CreateChatCompletion(ctx,
			oai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: userMessage("hi")})
		done <- err
	}()
	<-billed
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client left: err = %v, want context.Canceled", err)
	}
	if got := srv.Stats(); got.Billed != 1 || got.CompletionTokens != 1 {
		t.Errorf("Stats = %+v, want the call billed", got)
	}
}

func TestMaxInFlight(t *testing.T) {
	const n = 4
	var arrived sync.WaitGroup
	arrived.Add(n)
	release := make(chan struct{})
	latency := func(*Request, int) time.Duration {
		arrived.Done()
		<-release // every request waits here until all are in
		return 0
	}
	srv, _ := start(t, Config{LatencyFunc: latency})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := post(t, srv, testKey, chat("gpt-4o-mini", "hi", nil)); r.status != http.StatusOK {
				t.Errorf("status %d", r.status)
			}
		}()
	}
	arrived.Wait()
	close(release)
	wg.Wait()
	if got := srv.Stats(); got.MaxInFlight != n || got.Billed != n {
		t.Errorf("Stats = %+v, want %d in flight at once", got, n)
	}
}

// Close ends the requests the server holds.
func TestCloseEndsHeldRequests(t *testing.T) {
	srv := New(Config{APIKey: testKey, Latency: time.Hour})
	srv.Inject(Timeout, 1)
	done := make(chan struct{})
	for i := 0; i < 2; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			_, _ = client(srv, testKey).CreateChatCompletion(context.Background(),
				oai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: userMessage("hi")})
		}()
	}
	for len(srv.Log()) < 2 { // the hang and the billed answer are logged before they wait
		time.Sleep(time.Millisecond)
	}
	srv.Close()
	<-done
	<-done
}
