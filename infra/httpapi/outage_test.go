package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// downModel fails every call with a 503 while down is set and answers a
// report otherwise.
type downModel struct{ down atomic.Bool }

func (m *downModel) Name() string { return "down-model" }

func (m *downModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	if m.down.Load() {
		return llm.Response{}, &llm.CallError{Err: fmt.Errorf("%w: 503 Service Unavailable", llm.ErrTransient), Sent: true}
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "the report"},
		Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}}, nil
}

// While its provider is down a research reads waiting_provider with the
// provider's last error and its next try, as the description says, with
// one waiting_provider event; once the provider is back it succeeds and
// the wait is gone.
func TestAResearchWaitingForItsProviderSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{{Source: "s", Title: "t", Body: "b"}}); err != nil {
		t.Fatal(err)
	}
	model := &downModel{}
	model.down.Store(true)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: model, Work: true, Config: jobs.Config{MaintainInterval: 20 * time.Millisecond,
		Outage: jobs.OutageConfig{BackoffBase: 10 * time.Millisecond, BackoffCap: 100 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Stop(context.Background()) })
	key, err := jobs.CreateKey(ctx, pool, "outage")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(validated(t, httpapi.New(httpapi.Deps{Service: agent})))
	t.Cleanup(srv.Close)
	get := func(path string, out any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, out) != nil {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/gb/research", strings.NewReader(`{"topic":"tides"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var started struct{ ID int64 }
	_ = json.NewDecoder(resp.Body).Decode(&started)
	resp.Body.Close()
	path := fmt.Sprintf("/v1/gb/research/%d", started.ID)
	var run struct {
		Status, State string
		Report        string
		ProviderWait  *struct {
			Model     string    `json:"model"`
			LastError string    `json:"last_error"`
			Tries     int       `json:"tries"`
			Since     time.Time `json:"since"`
			NextTry   time.Time `json:"next_try"`
		} `json:"provider_wait"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		get(path, &run)
		if run.State == jobs.StateWaitingProvider && run.ProviderWait != nil && run.ProviderWait.Tries >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never waiting for its provider: %+v", run)
		}
	}
	if w := run.ProviderWait; w.Model != "down-model" || !strings.Contains(w.LastError, "503") || w.NextTry.Before(w.Since) {
		t.Errorf("provider_wait %+v: want the model, its 503 and a next try", w)
	}
	model.down.Store(false)
	for deadline := time.Now().Add(30 * time.Second); run.Status != jobs.StatusSucceeded; time.Sleep(20 * time.Millisecond) {
		run.ProviderWait = nil
		get(path, &run)
		if time.Now().After(deadline) {
			t.Fatalf("never succeeded: %+v", run)
		}
	}
	if run.Report != "the report" || run.ProviderWait != nil {
		t.Errorf("after the outage: %+v, want the report and no wait", run)
	}
	var evs struct {
		Events []struct{ Kind string } `json:"events"`
	}
	get(path+"/events", &evs)
	kinds := map[string]int{}
	for _, e := range evs.Events {
		kinds[e.Kind]++
	}
	if kinds[jobs.EventWaitingProvider] != 1 || kinds[jobs.EventProviderRecovered] != 1 {
		t.Errorf("events %v: want one waiting_provider and one provider_recovered", kinds)
	}
}
