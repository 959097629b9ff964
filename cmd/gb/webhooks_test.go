package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/fetch"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// hookReceiver records the webhooks it gets and answers 200.
type hookReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*http.Request
	bod [][]byte
}

// startWebhookStack is an API with a working agent whose webhook sender
// lets only the receiver through, a user key and a built gb.
func startWebhookStack(t *testing.T) (*cliStack, *hookReceiver) {
	t.Helper()
	ctx := context.Background()
	rcv := &hookReceiver{}
	rcv.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rcv.mu.Lock()
		rcv.got, rcv.bod = append(rcv.got, r), append(rcv.bod, body)
		rcv.mu.Unlock()
	}))
	t.Cleanup(rcv.srv.Close)
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t), MaxConns: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{{Source: "s", Title: "WaitGroup", Body: "A WaitGroup waits."}}); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(rcv.srv.URL)
	port, _ := strconv.ParseUint(u.Port(), 10, 16)
	sender := fetch.NewWebhookClient(fetch.Config{Allow: []fetch.Rule{
		{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Low: uint16(port), Top: uint16(port)}}})
	return serveCLIStack(t, pool, jobs.Deps{Model: &offline.Model{}, Webhooks: sender}, httpapi.Deps{}, "cli"), rcv
}

// TestWebhooksCLI drives gb webhooks and gb research webhooks against a
// real API: the default URL is checked and set, the secret shown and
// rotated, and a research's signed delivery listed.
func TestWebhooksCLI(t *testing.T) {
	t.Parallel()
	s, rcv := startWebhookStack(t)
	if code, out, _ := s.gb(t, s.key, "webhooks", "show"); code != 0 || !strings.Contains(out, "none") ||
		!strings.Contains(out, jobs.WebhookCancelled) {
		t.Fatalf("show: %d %s", code, out)
	}
	if code, _, errOut := s.gb(t, s.key, "webhooks", "set", "http://127.0.0.1:1/hook"); code != 1 || !strings.Contains(errOut, "loopback") {
		t.Errorf("set on loopback: %d %s, want exit 1 saying loopback", code, errOut)
	}
	if code, out, _ := s.gb(t, s.key, "webhooks", "set", rcv.srv.URL+"/default"); code != 0 || !strings.Contains(out, rcv.srv.URL+"/default") {
		t.Fatalf("set: %d %s", code, out)
	}
	var settings jobs.WebhookSettings
	if _, out, _ := s.gb(t, s.key, "webhooks", "show", "-o", "json"); json.Unmarshal([]byte(out), &settings) != nil ||
		settings.URL != rcv.srv.URL+"/default" {
		t.Errorf("show -o json: %s", out)
	}
	_, first, _ := s.gb(t, s.key, "webhooks", "secret", "show")
	_, again, _ := s.gb(t, s.key, "webhooks", "secret", "show")
	code, rotated, errOut := s.gb(t, s.key, "webhooks", "secret", "rotate")
	if !strings.HasPrefix(first, "whsec_") || again != first || code != 0 || !strings.HasPrefix(rotated, "whsec_") ||
		rotated == first || !strings.Contains(errOut, "rotated") {
		t.Fatalf("secrets: %q, %q, rotated %d %q %s", first, again, code, rotated, errOut)
	}
	code, out, errOut := s.gb(t, s.key, "research", "start", "What is a WaitGroup?", "--webhook-url", rcv.srv.URL+"/own")
	if code != 0 {
		t.Fatalf("start: %d %s %s", code, out, errOut)
	}
	id := strings.TrimSpace(out)
	var page struct {
		Deliveries []jobs.WebhookDelivery `json:"deliveries"`
	}
	waitFor(t, 60*time.Second, "a delivered webhook", func() bool {
		_, out, _ := s.gb(t, s.key, "research", "webhooks", id, "-o", "json")
		return json.Unmarshal([]byte(out), &page) == nil && len(page.Deliveries) == 1 &&
			page.Deliveries[0].Status == jobs.DeliveryDelivered
	})
	if d := page.Deliveries[0]; d.URL != rcv.srv.URL+"/own" || len(d.Attempts) != 1 || d.Attempts[0].Outcome != jobs.DeliveryDelivered {
		t.Errorf("delivery %+v, want one to the research's own URL, delivered at once", d)
	}
	if code, out, _ := s.gb(t, s.key, "research", "webhooks", id); code != 0 || !strings.Contains(out, "delivered") ||
		!strings.Contains(out, page.Deliveries[0].WebhookID) || !strings.Contains(out, "200") {
		t.Errorf("research webhooks: %d %s", code, out)
	}
	rcv.mu.Lock()
	got, body := rcv.got, rcv.bod
	rcv.mu.Unlock()
	if len(got) != 1 || got[0].URL.Path != "/own" || !signedBy(strings.TrimSpace(rotated), got[0].Header, body[0]) {
		t.Errorf("the receiver got %d requests, want one at /own signed with the rotated secret", len(got))
	}
	if code, out, _ := s.gb(t, s.key, "webhooks", "unset"); code != 0 || !strings.Contains(out, "no default") {
		t.Errorf("unset: %d %s", code, out)
	}
	if code, _, errOut := s.gb(t, s.key, "research", "webhooks", "abc"); code != exitUsage || !strings.Contains(errOut, "not a run id") {
		t.Errorf("research webhooks abc: %d %s", code, errOut)
	}
}

// signedBy checks a webhook's signature with secret, as a receiver would.
func signedBy(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "."))
	mac.Write(body)
	return h.Get("webhook-signature") == "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
