package jobs_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/fetch"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// hook is one request a receiver got.
type hook struct {
	id, timestamp, signature string
	body                     []byte
	answered                 int
}

// receiver is a webhook endpoint on loopback. answer says what to answer
// the nth request (from 1) of a webhook-id.
type receiver struct {
	srv    *httptest.Server
	answer func(id string, n int) int
	mu     sync.Mutex
	got    []hook
}

func newReceiver(t *testing.T, answer func(id string, n int) int) *receiver {
	t.Helper()
	r := &receiver{answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		h := hook{id: req.Header.Get("webhook-id"), timestamp: req.Header.Get("webhook-timestamp"),
			signature: req.Header.Get("webhook-signature"), body: body}
		r.mu.Lock()
		n := 1
		for _, g := range r.got {
			if g.id == h.id {
				n++
			}
		}
		r.mu.Unlock()
		h.answered = r.answer(h.id, n)
		r.mu.Lock()
		r.got = append(r.got, h)
		r.mu.Unlock()
		w.WriteHeader(h.answered)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// hooks returns what the receiver got so far.
func (r *receiver) hooks() []hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hook(nil), r.got...)
}

// port is the receiver's port.
func (r *receiver) port(t *testing.T) uint16 {
	u, _ := url.Parse(r.srv.URL)
	p, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(p)
}

// allowed is a sender whose guard lets the receiver's loopback port
// through, as GB_FETCH_ALLOW=127.0.0.1/32:PORT does.
func (r *receiver) allowed(t *testing.T) jobs.WebhookSender {
	p := r.port(t)
	return fetch.NewWebhookClient(fetch.Config{Allow: []fetch.Rule{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Low: p, Top: p}}})
}

// verify checks a request's signature as a receiver would, with the
// Standard Webhooks scheme written out here rather than gb's own code.
func verify(secret string, h hook) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.id + "." + h.timestamp + "."))
	mac.Write(h.body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(h.signature) {
		v, sig, _ := strings.Cut(s, ",")
		got, err := base64.StdEncoding.DecodeString(sig)
		if v == "v1" && err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// webhookModel ends a research by its topic: "ok" writes a report, "fail"
// ends without one, "hold" waits until its step is cancelled.
func webhookModel() llm.Model {
	return &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		switch {
		case strings.HasPrefix(topic(req), "ok"):
			return llm.Message{Content: "The report."}, nil
		case strings.HasPrefix(topic(req), "hold"):
			<-ctx.Done()
			return llm.Message{}, ctx.Err()
		}
		return llm.Message{}, nil
	}}
}

// webhookAgent is an agent on pool with sender and a 1 ms retry base,
// working jobs when work is set; stopped when the test ends.
func webhookAgent(t *testing.T, pool *pgxpool.Pool, sender jobs.WebhookSender, work bool) *jobs.Service {
	t.Helper()
	a, err := jobs.New(jobs.Deps{Pool: pool, Model: webhookModel(), Webhooks: sender, Work: work,
		Config: jobs.Config{WebhookRetryBase: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if work {
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = a.Stop(ctx)
		})
	}
	return a
}

// webhookUser makes a user with a key and returns its id.
func webhookUser(t *testing.T, pool *pgxpool.Pool, name string) int64 {
	t.Helper()
	if _, err := jobs.CreateKey(context.Background(), pool, name); err != nil {
		t.Fatal(err)
	}
	uid, err := jobs.UserID(context.Background(), pool, name)
	if err != nil {
		t.Fatal(err)
	}
	return uid
}

// settled waits until every delivery of each run is settled (not
// pending) and returns them by run.
func settled(t *testing.T, pool *pgxpool.Pool, uid int64, runs ...int64) map[int64][]jobs.WebhookDelivery {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, pending := map[int64][]jobs.WebhookDelivery{}, false
		for _, id := range runs {
			ds, err := jobs.WebhookDeliveries(context.Background(), pool, uid, id)
			if err != nil {
				t.Fatal(err)
			}
			pending = pending || len(ds) == 0
			for _, d := range ds {
				pending = pending || d.Status == jobs.DeliveryPending
			}
			out[id] = ds
		}
		if !pending {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries still pending: %+v", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhookDeliveredOnceAfterFailures ends three researches three ways.
// The receiver fails the first two attempts of each event: every event
// arrives signed, is retried with the same webhook-id and body, and is
// accepted exactly once; a repeated end inserts nothing more.
func TestWebhookDeliveredOnceAfterFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	loadDocs(t, pool)
	rcv := newReceiver(t, func(_ string, n int) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	a := webhookAgent(t, pool, rcv.allowed(t), true)
	uid := webhookUser(t, pool, "alice")
	want := map[int64]string{}
	for _, c := range []struct{ topic, event string }{
		{"ok: what is a WaitGroup?", jobs.WebhookSucceeded},
		{"fail: what is a Mutex?", jobs.WebhookFailed},
		{"hold: what is a context?", jobs.WebhookCancelled},
	} {
		run, _, err := a.StartResearch(ctx, jobs.StartParams{UserID: uid, Topic: c.topic, WebhookURL: rcv.srv.URL + "/hook?token=t"})
		if err != nil {
			t.Fatal(err)
		}
		if c.event == jobs.WebhookCancelled {
			if _, err := a.Cancel(ctx, uid, run.ID); err != nil {
				t.Fatal(err)
			}
		}
		want[run.ID] = c.event
	}
	var ids []int64
	for id := range want {
		ids = append(ids, id)
	}
	byRun := settled(t, pool, uid, ids...)
	secret, err := jobs.GetWebhookSecret(ctx, pool, uid)
	if err != nil {
		t.Fatal(err)
	}
	for id, event := range want {
		ds := byRun[id]
		if len(ds) != 1 || ds[0].Event != event || ds[0].Status != jobs.DeliveryDelivered || len(ds[0].Attempts) != 3 {
			t.Fatalf("run %d: deliveries %+v, want one %s, delivered at its third attempt", id, ds, event)
		}
		for i, at := range ds[0].Attempts {
			wantOutcome, wantStatus := jobs.AttemptRetrying, http.StatusInternalServerError
			if i == 2 {
				wantOutcome, wantStatus = jobs.DeliveryDelivered, http.StatusNoContent
			}
			if at.Outcome != wantOutcome || at.HTTPStatus == nil || *at.HTTPStatus != wantStatus {
				t.Errorf("run %d attempt %d: %+v, want %s with %d", id, i+1, at, wantOutcome, wantStatus)
			}
		}
		checkHooks(t, rcv.hooks(), ds[0], secret.Secret, id, event)
	}
	// An end repeated under the tree's lock inserts no second delivery.
	for id := range want {
		if err := a.EndAgainForTest(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	var deliveries, webhookJobs int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM gb_webhook_deliveries").Scan(&deliveries); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = $1", jobs.WebhookKind).Scan(&webhookJobs); err != nil {
		t.Fatal(err)
	}
	if deliveries != 3 || webhookJobs != 3 {
		t.Errorf("after repeated ends: %d deliveries and %d jobs, want 3 and 3", deliveries, webhookJobs)
	}
}

// checkHooks checks what the receiver got of one delivery: three requests
// with its webhook-id, each validly signed, the same body every time,
// answered 500, 500 and 204, the body saying what the run came to without
// its report.
func checkHooks(t *testing.T, got []hook, d jobs.WebhookDelivery, secret string, runID int64, event string) {
	t.Helper()
	var mine []hook
	for _, h := range got {
		if h.id == d.WebhookID {
			mine = append(mine, h)
		}
	}
	if len(mine) != 3 || mine[0].answered != 500 || mine[1].answered != 500 || mine[2].answered != 204 {
		t.Fatalf("run %d: the receiver got %d requests of %s, want 3 answered 500, 500, 204", runID, len(mine), d.WebhookID)
	}
	for i, h := range mine {
		if !verify(secret, h) {
			t.Errorf("run %d request %d: the signature %q does not verify", runID, i+1, h.signature)
		}
		if string(h.body) != string(mine[0].body) {
			t.Errorf("run %d request %d: the body changed between attempts", runID, i+1)
		}
	}
	var p map[string]any
	if err := json.Unmarshal(mine[0].body, &p); err != nil {
		t.Fatal(err)
	}
	data, _ := p["data"].(map[string]any)
	if p["type"] != event || data["id"] != float64(runID) || data["path"] != "/v1/gb/research/"+strconv.FormatInt(runID, 10) ||
		data["ended_at"] == nil || data["usage"] == nil {
		t.Errorf("run %d: payload %s", runID, mine[0].body)
	}
	if _, ok := data["report"]; ok || strings.Contains(string(mine[0].body), "The report.") {
		t.Errorf("run %d: the payload holds the report: %s", runID, mine[0].body)
	}
}

// publicResolver answers every host with a public address.
type publicResolver struct{}

func (publicResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
}

// loopbackResolver answers every host with loopback, as a DNS record
// changed after the check would.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestWebhookForbiddenAddressRefused: a URL on a loopback or metadata
// address is refused when the research starts; one whose host resolves to
// loopback only by the time of the delivery is refused then, recorded,
// and never retried nor reached.
func TestWebhookForbiddenAddressRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	loadDocs(t, pool)
	rcv := newReceiver(t, func(string, int) int { return http.StatusNoContent })
	port := rcv.port(t)
	// The API's side resolves the host to a public address; the worker's
	// finds loopback, with no allow-list.
	api := webhookAgent(t, pool, fetch.NewWebhookClient(fetch.Config{Resolver: publicResolver{}, Ports: []uint16{port}}), false)
	webhookAgent(t, pool, fetch.NewWebhookClient(fetch.Config{Resolver: loopbackResolver{}, Ports: []uint16{port}}), true)
	uid := webhookUser(t, pool, "alice")
	guarded := webhookAgent(t, pool, fetch.NewWebhookClient(fetch.Config{}), false)
	for url, why := range map[string]string{
		rcv.srv.URL + "/hook":                      "loopback",
		"http://169.254.169.254/latest/meta-data/": "metadata",
		"http://10.1.2.3/hook":                     "private",
	} {
		_, _, err := guarded.StartResearch(ctx, jobs.StartParams{UserID: uid, Topic: "ok", WebhookURL: url})
		var fe *jobs.FieldError
		if !errors.As(err, &fe) || fe.Field != "webhook_url" || !strings.Contains(err.Error(), why) {
			t.Errorf("start with %s: %v, want a webhook_url error saying %s", url, err, why)
		}
	}
	hookURL := "http://hooks.example.test:" + strconv.Itoa(int(port)) + "/hook"
	run, _, err := api.StartResearch(ctx, jobs.StartParams{UserID: uid, Topic: "ok: refused", WebhookURL: hookURL})
	if err != nil {
		t.Fatal(err)
	}
	ds := settled(t, pool, uid, run.ID)[run.ID]
	if len(ds) != 1 || ds[0].Status != jobs.DeliveryRefused || len(ds[0].Attempts) != 1 || ds[0].URL != hookURL {
		t.Fatalf("deliveries %+v, want one refused at its first attempt", ds)
	}
	at := ds[0].Attempts[0]
	if at.Outcome != jobs.DeliveryRefused || at.HTTPStatus != nil || !strings.Contains(at.Error, "loopback") {
		t.Errorf("attempt %+v, want refused with no answer, saying loopback", at)
	}
	if n := len(rcv.hooks()); n != 0 {
		t.Errorf("the receiver got %d requests through the guard", n)
	}
}

// TestWebhookRotatedSecretSignsNextDelivery rotates the secret while the
// first attempt is answered: the retry is signed with the new secret only.
func TestWebhookRotatedSecretSignsNextDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	loadDocs(t, pool)
	uid := webhookUser(t, pool, "alice")
	old, err := jobs.GetWebhookSecret(ctx, pool, uid)
	if err != nil {
		t.Fatal(err)
	}
	var rotated *jobs.WebhookSecret
	rcv := newReceiver(t, func(_ string, n int) int {
		if n > 1 {
			return http.StatusOK
		}
		if rotated, err = jobs.RotateWebhookSecret(ctx, pool, uid); err != nil {
			t.Error(err)
		}
		return http.StatusServiceUnavailable
	})
	a := webhookAgent(t, pool, rcv.allowed(t), true)
	if _, err := a.SetWebhookURL(ctx, uid, rcv.srv.URL+"/default"); err != nil {
		t.Fatal(err)
	}
	run, _, err := a.StartResearch(ctx, jobs.StartParams{UserID: uid, Topic: "ok: rotate"})
	if err != nil {
		t.Fatal(err)
	}
	ds := settled(t, pool, uid, run.ID)[run.ID]
	got := rcv.hooks()
	if len(ds) != 1 || ds[0].Status != jobs.DeliveryDelivered || ds[0].URL != rcv.srv.URL+"/default" || len(got) != 2 {
		t.Fatalf("deliveries %+v, %d requests: want one to the default URL, delivered at the second", ds, len(got))
	}
	if rotated == nil || rotated.Secret == old.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
		t.Fatalf("rotated secret %+v, old %s", rotated, old.Secret)
	}
	if !verify(old.Secret, got[0]) || verify(rotated.Secret, got[0]) {
		t.Error("the first attempt is not signed with the secret of its time only")
	}
	if !verify(rotated.Secret, got[1]) || verify(old.Secret, got[1]) {
		t.Error("the attempt after the rotation is not signed with the new secret only")
	}
}

// TestWebhookNoURLNoDelivery: a research with no URL of its own and no
// default sends nothing, and its deliveries are its owner's to list.
func TestWebhookNoURLNoDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	loadDocs(t, pool)
	a := webhookAgent(t, pool, nil, true)
	uid := webhookUser(t, pool, "alice")
	run, _, err := a.StartResearch(ctx, jobs.StartParams{UserID: uid, Topic: "ok: no hook"})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, pool, run.ID, 60*time.Second)
	ds, err := jobs.WebhookDeliveries(ctx, pool, uid, run.ID)
	if err != nil || len(ds) != 0 {
		t.Fatalf("deliveries %+v %v, want none", ds, err)
	}
	if _, err := jobs.WebhookDeliveries(ctx, pool, webhookUser(t, pool, "bob"), run.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("another user's research: %v, want ErrNotFound", err)
	}
}
