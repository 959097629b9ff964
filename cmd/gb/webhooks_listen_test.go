package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// signed is a delivery of body signed with secret at ts.
func signed(t *testing.T, secret, id string, ts int64, body string) http.Header {
	t.Helper()
	sig, err := jobs.SignWebhook(secret, id, ts, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(jobs.HeaderWebhookID, id)
	h.Set(jobs.HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	h.Set(jobs.HeaderWebhookSignature, sig)
	return h
}

// TestHookVerifier checks the receiver's Standard Webhooks checks: a good
// signature among several passes; another secret's, a changed body, a
// stale or future timestamp and missing headers are rejected with the
// status and reason they call for.
func TestHookVerifier(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	v := &hookVerifier{secret: testSecret, tolerance: 5 * time.Minute, now: func() time.Time { return now }}
	body := `{"type":"research.succeeded"}`
	good := signed(t, testSecret, "msg_1", now.Unix(), body)
	good.Set(jobs.HeaderWebhookSignature, "v1,bm90IGl0 "+good.Get(jobs.HeaderWebhookSignature))
	if status, why := v.verify(good, []byte(body)); status != 0 {
		t.Errorf("a good delivery was rejected: %d %s", status, why)
	}
	for _, c := range []struct {
		name   string
		h      http.Header
		body   string
		status int
		why    string
	}{
		{"another secret", signed(t, "whsec_"+strings.Repeat("QUJD", 8), "msg_1", now.Unix(), body), body, 401, "bad signature"},
		{"a changed body", signed(t, testSecret, "msg_1", now.Unix(), body), body + " ", 401, "bad signature"},
		{"a stale timestamp", signed(t, testSecret, "msg_1", now.Add(-6*time.Minute).Unix(), body), body, 400, "6m0s off"},
		{"a future timestamp", signed(t, testSecret, "msg_1", now.Add(time.Hour).Unix(), body), body, 400, "beyond --tolerance"},
		{"no headers", http.Header{}, body, 400, "missing webhook-id"},
	} {
		if status, why := v.verify(c.h, []byte(c.body)); status != c.status || !strings.Contains(why, c.why) {
			t.Errorf("%s: %d %q, want %d and %q", c.name, status, why, c.status, c.why)
		}
	}
}

// TestWebhooksListen runs gb webhooks listen against a real API and
// worker: a forged delivery is rejected with a line saying why, a signed
// one with terminal controls in its text prints them inert, and the
// research.succeeded delivery of a research started with the receiver's
// URL prints its research; then --count ends the receiver with exit 0.
func TestWebhooksListen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t), MaxConns: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{{Source: "s", Title: "WaitGroup", Body: "A WaitGroup waits."}}); err != nil {
		t.Fatal(err)
	}
	sender := fetch.NewWebhookClient(fetch.Config{Allow: []fetch.Rule{
		{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Low: 1024, Top: 65535}}})
	s := serveCLIStack(t, pool, jobs.Deps{Model: &offline.Model{}, Webhooks: sender}, httpapi.Deps{}, "listener")

	if code, _, errOut := s.gb(t, s.key, "webhooks", "listen", "--addr", "0.0.0.0:9000"); code != exitUsage || !strings.Contains(errOut, "not a loopback address") {
		t.Errorf("listen on 0.0.0.0: exit %d %s, want 2", code, errOut)
	}
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, s.bin, "webhooks", "listen", "--addr", "127.0.0.1:0", "--count", "2")
	cmd.Env = append(os.Environ(), "GB_API_URL="+s.url, "GB_API_KEY="+s.key, "GB_WEBHOOK_SECRET=")
	var stdout syncBuffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "listening on http://127.0.0.1:") {
		t.Fatalf("listen said %q (%v)", first, err)
	}
	url := strings.TrimSuffix(strings.Fields(first)[2], ":")

	post := func(h http.Header, body string) int {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	_, secret, _ := s.gb(t, s.key, "webhooks", "secret", "show")
	secret = strings.TrimSpace(secret)
	now := time.Now().Unix()
	hostile := `{"type":"research.failed","data":{"id":7,"status":"failed","error":"\u001b[2Jgone\u0007","path":"/v1/gb/research/7"}}`
	if got := post(signed(t, testSecret, "msg_forged", now, hostile), hostile); got != 401 {
		t.Errorf("a delivery signed with another secret was answered %d, want 401", got)
	}
	if got := post(signed(t, secret, "msg_hostile", now, hostile), hostile); got != 200 {
		t.Errorf("a signed delivery was answered %d, want 200", got)
	}
	if got := post(signed(t, secret, "msg_hostile", now, hostile), hostile); got != 200 {
		t.Errorf("a repeat was answered %d, want 200", got)
	}
	code, out, errOut := s.gb(t, s.key, "research", "start", "What does a WaitGroup do?", "--webhook-url", url)
	if code != 0 {
		t.Fatalf("start: %d %s %s", code, out, errOut)
	}
	id := strings.TrimSpace(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("listen --count 2 did not end well: %v\n%s", err, stdout.String())
	}
	got := stdout.String()
	for _, want := range []string{
		"rejected webhook-id msg_forged: bad signature: not signed with your secret",
		"research.failed research 7 failed · msg_hostile",
		"repeat of msg_hostile, already printed",
		"research.succeeded research " + id + " succeeded · msg_",
		"/v1/gb/research/" + id,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("listen printed no %q:\n%s", want, got)
		}
	}
	if bytes.ContainsAny([]byte(got), "\x1b\x07") || !strings.Contains(got, "gone") {
		t.Errorf("listen printed the event's controls, or not its text:\n%q", got)
	}
}
