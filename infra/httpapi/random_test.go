package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// defaultRandomSeed makes TestRandomRequests repeatable; GB_RANDOM_SEED
// replaces it and GB_RANDOM_REQUESTS the number of requests.
const defaultRandomSeed = 20261201

// TestRandomRequests sends thousands of mutated requests over every route
// (methods, paths, ids, query strings, bodies, Authorization headers) to
// the real handler on a real database: none may answer 5xx or hang, and
// every answer with a body must be JSON, an error body when not a success.
// Request i is generated from (seed, i) alone, so a failure names the
// request to replay.
func TestRandomRequests(t *testing.T) {
	t.Parallel()
	seed := uint64(envInt(t, "GB_RANDOM_SEED", defaultRandomSeed))
	n := envInt(t, "GB_RANDOM_REQUESTS", 5000)
	t.Logf("seed %d, %d requests; replay with GB_RANDOM_SEED=%d go test -run TestRandomRequests ./infra/httpapi/", seed, n, seed)
	b := setup(t)
	g := &requestGen{alice: b.alice, bob: b.bob}
	for i := 0; i < 3; i++ {
		_, run := b.call(t, b.alice, "POST", "/v1/gb/research", fmt.Sprintf(`{"topic":"seed run %d"}`, i))
		g.ids = append(g.ids, fmt.Sprint(run["id"]))
	}
	_, run := b.call(t, b.bob, "POST", "/v1/gb/research", `{"topic":"bob's run"}`)
	g.bobID = fmt.Sprint(run["id"])
	client := &http.Client{
		Timeout:       15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	statuses := map[int]int{}
	start := time.Now()
	for i := range n {
		rr := g.request(rand.New(rand.NewPCG(seed, uint64(i))))
		status, loc, err := rr.send(client, b.srv.URL)
		if err != nil {
			t.Fatalf("request %d (seed %d) %s: %v", i, seed, rr, err)
		}
		statuses[status]++
		g.learn(rr, status, loc)
		if len(g.ids) < 3 {
			g.ids = append(g.ids, newRun(t, b, g.ids))
		}
	}
	t.Logf("%d requests in %v; answers by status: %v", n, time.Since(start).Round(time.Millisecond), statuses)
	// The generator must reach every kind of answer, or it tests little.
	for _, want := range []int{200, 202, 204, 307, 400, 401, 404, 405, 409, 413, 429, 431} {
		if statuses[want] == 0 && n >= 2000 {
			t.Errorf("no request answered %d: the generator no longer reaches it", want)
		}
	}
}

// learn keeps the ids of runs that exist: a new one, not a deleted one.
func (g *requestGen) learn(rr *randomRequest, status int, location string) {
	switch {
	case status == http.StatusAccepted && rr.authKind != "bob" && strings.HasPrefix(location, "/v1/gb/research/"):
		g.ids = append(g.ids, strings.TrimPrefix(location, "/v1/gb/research/"))
	case status == http.StatusNoContent:
		g.ids = slices.DeleteFunc(g.ids, func(id string) bool { return id == rr.id })
	}
}

// newRun starts a run for alice, cancelling her others first if she has
// too many working; every run of hers is in ids.
func newRun(t *testing.T, b *testBundle, ids []string) string {
	t.Helper()
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"another run"}`)
	if code == http.StatusTooManyRequests {
		for _, id := range ids {
			b.call(t, b.alice, "POST", "/v1/gb/research/"+id+"/cancel", "")
		}
		code, run = b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"another run"}`)
	}
	if code != http.StatusAccepted {
		t.Fatalf("starting a run to work on: %d %v", code, run)
	}
	return fmt.Sprint(run["id"])
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q is not an integer", name, s)
	}
	return n
}

// randomRequest is one generated request; authKind names its
// Authorization header without showing the key.
type randomRequest struct {
	method, target, authKind string
	id                       string // the {id} of the path
	header                   http.Header
	body                     []byte
}

func (rr *randomRequest) String() string {
	body := rr.body
	if len(body) > 300 {
		body = body[:300]
	}
	return fmt.Sprintf("%s %q auth=%s body(%d bytes)=%q", rr.method, rr.target, rr.authKind, len(rr.body), body)
}

// send sends the request and checks its answer: below 500, and JSON.
func (rr *randomRequest) send(client *http.Client, base string) (status int, location string, err error) {
	req, err := http.NewRequest(rr.method, base+rr.target, bytes.NewReader(rr.body))
	if err != nil {
		return 0, "", fmt.Errorf("building the request: %w", err)
	}
	req.Header = rr.header
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode >= 500 {
		return 0, "", fmt.Errorf("answered %d: %s", resp.StatusCode, data)
	}
	if len(data) == 0 && (rr.method == "HEAD" || resp.StatusCode == http.StatusNoContent) {
		return resp.StatusCode, resp.Header.Get("Location"), nil
	}
	var e struct {
		Error *struct{ Code, Message string }
	}
	switch {
	case resp.Header.Get("Content-Type") != "application/json":
		return 0, "", fmt.Errorf("answered %d with Content-Type %q: %q", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	case !json.Valid(data):
		return 0, "", fmt.Errorf("answered %d with a body that is not JSON: %q", resp.StatusCode, data)
	case resp.StatusCode >= 300 && (json.Unmarshal(data, &e) != nil || e.Error == nil || e.Error.Code == "" || e.Error.Message == ""):
		return 0, "", fmt.Errorf("answered %d with a body that is not a JSON error: %q", resp.StatusCode, data)
	}
	return resp.StatusCode, resp.Header.Get("Location"), nil
}

// requestGen generates requests; ids are alice's runs that exist, bobID
// one of bob's.
type requestGen struct {
	alice, bob string
	ids        []string
	bobID      string
}

// randomRoute is a route's method, path under /v1/gb/research, and body.
type randomRoute struct {
	method, suffix string
	body           func(g *requestGen, r *rand.Rand) []byte
}

var randomRoutes = []randomRoute{
	{"POST", "", (*requestGen).createBody},
	{"GET", "", nil},
	{"GET", "/{id}", nil},
	{"DELETE", "/{id}", nil},
	{"POST", "/{id}/cancel", nil},
	{"GET", "/{id}/tree", nil},
	{"GET", "/{id}/events", nil},
	{"GET", "/{id}/messages", nil},
	{"POST", "/{id}/messages", (*requestGen).messageBody},
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func (g *requestGen) request(r *rand.Rand) *randomRequest {
	rt := pick(r, randomRoutes...)
	if (rt.method == "DELETE" || strings.HasSuffix(rt.suffix, "/cancel")) && r.IntN(4) != 0 {
		// Rarer, so that runs are left to work on and some stay working.
		rt = pick(r, randomRoutes[:3]...)
	}
	rr := &randomRequest{method: rt.method, header: http.Header{}}
	if r.IntN(8) == 0 {
		rr.method = pick(r, "GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS", "TRACE", "get", "FOO")
	}
	rr.id = g.id(r)
	rr.target = g.path(r, rt.suffix, rr.id) + g.query(r)
	switch {
	case rt.body != nil:
		rr.body = rt.body(g, r)
	case r.IntN(10) == 0:
		rr.body = g.createBody(r) // a body where none is read
	}
	rr.authKind = g.auth(r, rr.header)
	if r.IntN(4) == 0 {
		rr.header.Set("Content-Type", pick(r, "application/json", "text/plain", "application/x-www-form-urlencoded", "ü/ß"))
	}
	return rr
}

func (g *requestGen) path(r *rand.Rand, suffix, id string) string {
	p := "/v1/gb/research" + strings.ReplaceAll(suffix, "{id}", id)
	if r.IntN(8) != 0 {
		return p
	}
	return pick(r, p+"/", "/"+p, strings.ToUpper(p), strings.Replace(p, "/research", "/./research", 1),
		strings.Replace(p, "/gb/", "/gb/x/../", 1), p+"/nope", p+"%2F", "/healthz", "/", "/v1/gb", "/v1/gb/research/%2e%2e")
}

func (g *requestGen) id(r *rand.Rand) string {
	if r.IntN(5) != 0 && len(g.ids) > 0 {
		return pick(r, g.ids...)
	}
	return pick(r, g.bobID, "0", "-1", "+1", "01", "1.0", "1e3", "0x1", "abc", "99999999999999999999", "9223372036854775807",
		"%FF", "%00", "%EF%BC%91", "%20", strconv.Itoa(r.IntN(1000)))
}

func (g *requestGen) query(r *rand.Rand) string {
	if r.IntN(3) != 0 {
		return ""
	}
	var parts []string
	for range 1 + r.IntN(3) {
		k := pick(r, "status", "limit", "cursor", "parent_id", "after", "STATUS", "x", "%FF")
		v := pick(r, "working", "queued", "failed", "bogus", "", "%00", "%FF", "-1", "0", "1", "100", "101", "1e9",
			"99999999999999999999", "abc", "%E2%82%AC", strconv.Itoa(r.IntN(50)))
		if len(g.ids) > 0 && r.IntN(4) == 0 {
			v = pick(r, g.ids...)
		}
		parts = append(parts, k+"="+v)
	}
	return "?" + strings.Join(parts, pick(r, "&", "&&", ";"))
}

// auth sets an Authorization header (or another header that is too big)
// and returns what kind it is.
func (g *requestGen) auth(r *rand.Rand, h http.Header) string {
	if r.IntN(10) < 7 {
		h.Set("Authorization", "Bearer "+g.alice)
		return "alice"
	}
	kinds := []struct {
		name, value string
	}{
		{"bob", "Bearer " + g.bob},
		{"none", ""},
		{"lower-case scheme", "bearer " + g.alice},
		{"upper-case scheme", "BEARER " + g.alice},
		{"two spaces", "Bearer  " + g.alice},
		{"scheme only", "Bearer"},
		{"basic", "Basic dXNlcjpwYXNz"},
		{"unknown key", "Bearer gb_" + strconv.FormatUint(r.Uint64(), 36)},
		{"key plus one", "Bearer " + g.alice + "x"},
		{"cut key", "Bearer " + g.alice[:10]},
		{"long key", "Bearer gb_" + strings.Repeat("a", 200)},
		{"non-ASCII key", "Bearer gb_\xff\xfe\u00e9"},
		{"huge header", "Bearer " + strings.Repeat("k", 40<<10)},
	}
	k := pick(r, kinds...)
	if k.value != "" {
		h.Set("Authorization", k.value)
	}
	return k.name
}

// createBody is a body for POST /v1/gb/research, often mutated.
func (g *requestGen) createBody(r *rand.Rand) []byte {
	fields := []string{`"topic":` + jsonText(r, 2100)}
	if r.IntN(2) == 0 {
		fields = append(fields, `"max_steps":`+pick(r, "0", "1", "5", "40", "41", "-1", "null", strconv.Itoa(r.IntN(60))))
	}
	if r.IntN(3) == 0 {
		fields = append(fields, `"dataset":`+pick(r, `"godoc"`, `"nope"`, `""`, `"go\u0000doc"`, "\"go\xffdoc\""))
	}
	if r.IntN(4) == 0 {
		fields = append(fields, `"max_cost_usd":`+pick(r, "0", "0.5", "-1", "1001", "1e308"))
	}
	if r.IntN(4) == 0 {
		fields = append(fields, `"max_tokens":`+pick(r, "0", "1000", "-5", "9223372036854775807"))
	}
	return mutate(r, []byte("{"+strings.Join(fields, ",")+"}"))
}

// messageBody is a body for POST …/messages, often mutated.
func (g *requestGen) messageBody(r *rand.Rand) []byte {
	return mutate(r, []byte(`{"text":`+jsonText(r, 10100)+`}`))
}

// jsonText is a JSON string of up to about max characters, sometimes with
// escapes, multi-byte characters, NULs or surrogates.
func jsonText(r *rand.Rand, max int) string {
	unit := pick(r, "a", "é", "語", "😀", `\n`, `\u0000`, `\ud83d\ude00`, `\ud800`, `\\`, `\"`, " ")
	n := pick(r, 0, 1, 5, r.IntN(100), max-r.IntN(200))
	return `"` + strings.Repeat(unit, max0(n)) + `"`
}

func max0(n int) int { return max(n, 0) }

// mutate damages a JSON body in one of many ways, half of the time.
func mutate(r *rand.Rand, body []byte) []byte {
	if r.IntN(2) == 0 {
		return body
	}
	s := string(body)
	switch r.IntN(14) {
	case 0: // truncated
		return body[:r.IntN(len(body)+1)]
	case 1: // wrong type
		return []byte(strings.Replace(s, `"topic":`, `"topic":`+pick(r, `1,"x":`, `[],"x":`, `{},"x":`, `true,"x":`), 1))
	case 2: // huge or fractional numbers
		return []byte(s[:len(s)-1] + `,"max_steps":` + pick(r, "1e400", "99999999999999999999", "2.5", "-0", "1E1") + "}")
	case 3: // a raw NUL byte
		return insertAt(r, body, "\x00")
	case 4: // invalid UTF-8
		return insertAt(r, body, pick(r, "\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80"))
	case 5: // an unknown key
		return []byte(strings.Replace(s, "{", `{"colour":"red",`, 1))
	case 6: // a case-changed key
		return []byte(strings.Replace(strings.Replace(s, `"topic"`, pick(r, `"TOPIC"`, `"Topic"`), 1), `"text"`, `"Text"`, 1))
	case 7: // a duplicate key
		return []byte(strings.Replace(s, "{", `{"topic":"first","text":"first",`, 1))
	case 8: // oversized
		return []byte(`{"topic":"` + strings.Repeat("x", 70<<10) + `"}`)
	case 9: // trailing data
		return []byte(s + pick(r, " {}", "}", "]", " x", "\n\n", "\x00"))
	case 10: // not an object
		return []byte(pick(r, "[]", `"x"`, "1", "null", "true", ""))
	case 11: // deeply nested
		d := 1 + r.IntN(20000)
		return []byte(`{"topic":` + strings.Repeat("[", d) + strings.Repeat("]", d) + "}")
	case 12: // random bytes
		junk := make([]byte, r.IntN(64))
		for i := range junk {
			junk[i] = byte(r.UintN(256))
		}
		return junk
	default: // a field as a string of JSON
		return []byte(strings.Replace(s, `"max_steps":`, `"max_steps":"`, 1))
	}
}

func insertAt(r *rand.Rand, body []byte, s string) []byte {
	i := r.IntN(len(body) + 1)
	return slices.Concat(body[:i], []byte(s), body[i:])
}
