package httpapi_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
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

// delivered is one request a test receiver got.
type delivered struct {
	path                     string
	id, timestamp, signature string
	body                     []byte
}

// webhookBundle is the API with a working agent whose webhook sender's
// guard lets only the test's receiver through (as GB_FETCH_ALLOW would).
type webhookBundle struct {
	*testBundle
	receiver *httptest.Server
	mu       sync.Mutex
	got      []delivered
}

func setupWebhooks(t *testing.T) *webhookBundle {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t), Proxy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, "godoc", []kb.Document{{Source: "s", Title: "t", Body: "b"}}); err != nil {
		t.Fatal(err)
	}
	b := &webhookBundle{testBundle: &testBundle{}}
	b.receiver = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.got = append(b.got, delivered{path: r.URL.Path, id: r.Header.Get("webhook-id"),
			timestamp: r.Header.Get("webhook-timestamp"), signature: r.Header.Get("webhook-signature"), body: body})
		b.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(b.receiver.Close)
	u, _ := url.Parse(b.receiver.URL)
	port, _ := strconv.ParseUint(u.Port(), 10, 16)
	sender := fetch.NewWebhookClient(fetch.Config{Allow: []fetch.Rule{
		{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Low: uint16(port), Top: uint16(port)}}})
	b.agent, err = jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}, Webhooks: sender, Work: true,
		Config: jobs.Config{WebhookRetryBase: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.agent.Stop(sctx)
	})
	for _, u := range []*string{&b.alice, &b.bob} {
		if *u, err = jobs.CreateKey(ctx, pool, fmt.Sprintf("user%p", u)); err != nil {
			t.Fatal(err)
		}
	}
	b.srv = httptest.NewServer(validated(t, httpapi.New(httpapi.Deps{Service: b.agent})))
	t.Cleanup(b.srv.Close)
	return b
}

// received returns what the receiver got at path.
func (b *webhookBundle) received(path string) []delivered {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []delivered
	for _, d := range b.got {
		if d.path == path {
			out = append(out, d)
		}
	}
	return out
}

// signedWith reports whether d's signature verifies with secret.
func signedWith(secret string, d delivered) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(d.id + "." + d.timestamp + "."))
	mac.Write(d.body)
	return d.signature == "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// deliveries polls the research's deliveries until one is settled.
func (b *webhookBundle) deliveries(t *testing.T, key string, id any) []any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := b.call(t, key, "GET", fmt.Sprintf("/v1/gb/research/%v/webhooks", id), "")
		ds, _ := body["deliveries"].([]any)
		if code != http.StatusOK {
			t.Fatalf("deliveries: %d %v", code, body)
		}
		if len(ds) > 0 && ds[0].(map[string]any)["status"] != "pending" {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("no settled delivery: %v", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhookSettingsAndSecret sets and checks the default URL, and makes
// and rotates the signing secret.
func TestWebhookSettingsAndSecret(t *testing.T) {
	t.Parallel()
	b := setupWebhooks(t)
	code, body := b.call(t, b.alice, "GET", "/v1/gb/webhooks", "")
	if code != http.StatusOK || body["url"] != "" || len(body["events"].([]any)) != len(jobs.WebhookEvents) {
		t.Fatalf("settings: %d %v", code, body)
	}
	for _, c := range []struct{ body, says string }{
		{`{}`, "url is required"},
		{`{"url":"ftp://x.example/hook"}`, "https (or http)"},
		{`{"url":"http://127.0.0.1:1/hook"}`, "loopback"},
		{`{"url":"http://169.254.169.254/latest"}`, "metadata"},
		{`{"url":"http://u:p@hooks.example/hook"}`, "credentials"},
	} {
		code, body := b.call(t, b.alice, "PUT", "/v1/gb/webhooks", c.body)
		if e := errorOf(body); code != http.StatusBadRequest || e["field"] != "url" || !strings.Contains(fmt.Sprint(e["message"]), c.says) {
			t.Errorf("PUT %s: %d %v, want 400 on url saying %q", c.body, code, body, c.says)
		}
	}
	hook := b.receiver.URL + "/default"
	if code, body := b.call(t, b.alice, "PUT", "/v1/gb/webhooks", `{"url":"`+hook+`"}`); code != http.StatusOK || body["url"] != hook {
		t.Fatalf("PUT: %d %v", code, body)
	}
	if _, body := b.call(t, b.bob, "GET", "/v1/gb/webhooks", ""); body["url"] != "" {
		t.Errorf("bob sees alice's URL: %v", body)
	}
	_, first := b.call(t, b.alice, "GET", "/v1/gb/webhooks/secret", "")
	_, again := b.call(t, b.alice, "GET", "/v1/gb/webhooks/secret", "")
	_, bobs := b.call(t, b.bob, "GET", "/v1/gb/webhooks/secret", "")
	secret, _ := first["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") || again["secret"] != secret || bobs["secret"] == secret {
		t.Fatalf("secrets: %v, then %v; bob's %v", first, again, bobs)
	}
	code, rotated := b.call(t, b.alice, "POST", "/v1/gb/webhooks/secret/rotate", "")
	if _, now := b.call(t, b.alice, "GET", "/v1/gb/webhooks/secret", ""); code != http.StatusOK ||
		rotated["secret"] == secret || now["secret"] != rotated["secret"] {
		t.Fatalf("rotate: %d %v, then %v", code, rotated, now)
	}
	if code, body := b.call(t, b.alice, "PUT", "/v1/gb/webhooks", `{"url":null}`); code != http.StatusOK || body["url"] != "" {
		t.Errorf("removing the URL: %d %v", code, body)
	}
}

// TestWebhookDeliveriesRoute starts researches with the default URL and
// with their own, and lists their signed deliveries; a URL the guard
// refuses is a 400, and another user's research a 404.
func TestWebhookDeliveriesRoute(t *testing.T) {
	t.Parallel()
	b := setupWebhooks(t)
	code, body := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"x","webhook_url":"http://10.0.0.7/hook"}`)
	if e := errorOf(body); code != http.StatusBadRequest || e["field"] != "webhook_url" || !strings.Contains(fmt.Sprint(e["message"]), "private") {
		t.Fatalf("a private webhook_url: %d %v", code, body)
	}
	b.call(t, b.alice, "PUT", "/v1/gb/webhooks", `{"url":"`+b.receiver.URL+`/default"}`)
	_, own := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"What is a WaitGroup?","webhook_url":"`+b.receiver.URL+`/own"}`)
	_, dflt := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"What is a Mutex?"}`)
	_, secret := b.call(t, b.alice, "GET", "/v1/gb/webhooks/secret", "")
	for path, run := range map[string]map[string]any{"/own": own, "/default": dflt} {
		ds := b.deliveries(t, b.alice, run["id"])
		d := ds[0].(map[string]any)
		attempts, _ := d["attempts"].([]any)
		if len(ds) != 1 || d["status"] != "delivered" || d["url"] != b.receiver.URL+path || len(attempts) != 1 ||
			!strings.HasPrefix(fmt.Sprint(d["event"]), "research.") {
			t.Fatalf("%s: deliveries %v", path, ds)
		}
		got := b.received(path)
		if len(got) != 1 || got[0].id != d["webhook_id"] || !signedWith(secret["secret"].(string), got[0]) {
			t.Fatalf("%s: the receiver got %+v, want one request signed with the secret, of %v", path, got, d["webhook_id"])
		}
		if !strings.Contains(string(got[0].body), fmt.Sprintf(`"path":"/v1/gb/research/%v"`, run["id"])) {
			t.Errorf("%s: body %s", path, got[0].body)
		}
	}
	if code, _ := b.call(t, b.bob, "GET", fmt.Sprintf("/v1/gb/research/%v/webhooks", own["id"]), ""); code != http.StatusNotFound {
		t.Errorf("bob listing alice's deliveries: %d, want 404", code)
	}
}
