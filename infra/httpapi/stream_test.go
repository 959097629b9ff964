package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/jobs"
)

// sseFrame is one message of an event stream, or a comment (heartbeat).
type sseFrame struct {
	id, event, data string
	comment         bool
}

// sseClient reads an event stream frame by frame.
type sseClient struct {
	resp *http.Response
	rd   *bufio.Reader
}

// openStream opens the event stream of run id with key; lastID, when not
// "", is sent as Last-Event-ID; query is appended to the path.
func openStream(t testing.TB, base, key string, id int64, lastID, query string) (*sseClient, int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", fmt.Sprintf("%s/v1/gb/research/%d/events/stream%s", base, id, query), nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, resp.StatusCode, string(body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream answered Content-Type %q", ct)
	}
	c := &sseClient{resp: resp, rd: bufio.NewReader(resp.Body)}
	t.Cleanup(c.close)
	return c, resp.StatusCode, ""
}

func (c *sseClient) close() { c.resp.Body.Close() }

// next reads the next frame; io.EOF when the server closed the stream.
func (c *sseClient) next() (sseFrame, error) {
	var f sseFrame
	seen := false
	for {
		line, err := c.rd.ReadString('\n')
		if err != nil {
			return f, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if seen {
				return f, nil
			}
		case strings.HasPrefix(line, ":"):
			return sseFrame{comment: true, data: line}, nil
		default:
			seen = true
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				f.id = v
			case "event":
				f.event = v
			case "data":
				f.data += v
			}
		}
	}
}

// streamBundle serves the API of setup with a short heartbeat and a bound
// of two streams a user.
func streamBundle(t *testing.T, d httpapi.Deps) (*testBundle, string) {
	t.Helper()
	b := setup(t)
	d.Service, d.Notifier = b.agent, b.wakes
	d.EventFallback = cmpOr(d.EventFallback, 500*time.Millisecond)
	d.StreamHeartbeat = cmpOr(d.StreamHeartbeat, 150*time.Millisecond)
	srv := httptest.NewServer(validated(t, httpapi.New(d)))
	t.Cleanup(srv.Close)
	return b, srv.URL
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// addEvents records n events of kind "step" on the tree of root, as the
// engine does: with a wake-up for waiting readers.
func addEvents(t testing.TB, b *testBundle, root int64, n int, tag string) {
	t.Helper()
	for i := range n {
		_, err := b.agent.Pool().Exec(context.Background(), `WITH ins AS (
				INSERT INTO gb_agent_research_events (root_id, run_id, kind, data)
				VALUES ($1, $1, 'step', jsonb_build_object('tag', $2::text)) RETURNING root_id)
			SELECT pg_notify('gb_events', root_id::text) FROM ins`, root, fmt.Sprintf("%s %d <b>\nline", tag, i))
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestEventStreamResumesWithLastEventID reads a tree's stream, drops the
// connection in the middle, lets events land meanwhile, reconnects with
// Last-Event-ID and reads to the tree's end: every event of the tree comes
// once, in order, with its tree number as the id and the events route's
// JSON as the data, heartbeats come while it is idle, and the stream ends
// with an end event, then closes.
func TestEventStreamResumesWithLastEventID(t *testing.T) {
	t.Parallel()
	b, base := streamBundle(t, httpapi.Deps{})
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"stream me"}`)
	if code != 202 {
		t.Fatalf("create: %d %v", code, run)
	}
	id := int64(run["id"].(float64))
	addEvents(t, b, id, 5, "before")

	got := map[int64]jobs.Event{}
	var order []int64
	take := func(f sseFrame) {
		t.Helper()
		var e jobs.Event
		if err := json.Unmarshal([]byte(f.data), &e); err != nil {
			t.Fatalf("event data %q: %v", f.data, err)
		}
		if strconv.FormatInt(e.N, 10) != f.id || e.RootID != id {
			t.Fatalf("frame id %q carries event %+v", f.id, e)
		}
		if _, dup := got[e.N]; dup {
			t.Fatalf("event %d came twice", e.N)
		}
		got[e.N] = e
		order = append(order, e.N)
	}

	// First connection: three events, then gone, with more on the wire.
	c, code, body := openStream(t, base, b.alice, id, "", "")
	if c == nil {
		t.Fatalf("stream: %d %s", code, body)
	}
	for len(order) < 3 {
		f, err := c.next()
		if err != nil {
			t.Fatalf("first stream: %v", err)
		}
		if !f.comment && f.event == "" && f.id != "" {
			take(f)
		}
	}
	c.close()
	addEvents(t, b, id, 3, "while away")

	// Second connection: Last-Event-ID wins over ?after.
	last := strconv.FormatInt(order[len(order)-1], 10)
	c, code, body = openStream(t, base, b.alice, id, last, "?after=1")
	if c == nil {
		t.Fatalf("reconnect: %d %s", code, body)
	}
	heartbeats, live := 0, false
	var landed time.Time // when the first live event was committed
	var end sseFrame
	for {
		f, err := c.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("second stream: %v", err)
		}
		switch {
		case f.comment:
			heartbeats++
			if !live && len(order) == 9 {
				// Idle and caught up: events land live, then the end.
				live = true
				landed = time.Now()
				addEvents(t, b, id, 2, "live")
				if code, _ := b.call(t, b.alice, "POST", fmt.Sprintf("/v1/gb/research/%d/cancel", id), ""); code != 200 {
					t.Fatalf("cancel: %d", code)
				}
			}
		case f.event == "end":
			end = f
		case f.event != "":
			t.Fatalf("unexpected %s event: %s", f.event, f.data)
		case f.id != "":
			if end.event != "" {
				t.Fatal("an event after the end")
			}
			take(f)
			if live && order[len(order)-1] == 10 {
				t.Logf("the first live event reached the client %v after its commit began", time.Since(landed))
			}
		}
	}
	if !live || heartbeats == 0 {
		t.Fatalf("live %v, %d heartbeats: the stream never idled caught up", live, heartbeats)
	}
	all, err := jobs.Events(context.Background(), b.agent.Pool(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(order) {
		t.Fatalf("the stream gave events %v; the tree has %d", order, len(all))
	}
	for i, e := range all {
		g := got[e.N]
		if order[i] != int64(i+1) || e.N != int64(i+1) || g.Seq != e.Seq || g.Kind != e.Kind || compact(t, g.Data) != compact(t, e.Data) {
			t.Fatalf("event %d: streamed %+v (order %v), the tree has %+v", i+1, g, order, e)
		}
	}
	if all[len(all)-1].Kind != jobs.EventFailed {
		t.Fatalf("the last event is %s, want the cancellation's failed", all[len(all)-1].Kind)
	}
	var e struct {
		RootID int64  `json:"root_id"`
		Status string `json:"status"`
		LastID int64  `json:"last_id"`
	}
	if err := json.Unmarshal([]byte(end.data), &e); err != nil || e.RootID != id || e.Status != jobs.StatusFailed ||
		e.LastID != int64(len(all)) {
		t.Fatalf("end event %q (%v): want root %d, failed, last id %d", end.data, err, id, len(all))
	}

	// An ended tree streams what it has from ?after, then ends at once.
	c, code, body = openStream(t, base, b.alice, id, "", fmt.Sprintf("?after=%d", len(all)-2))
	if c == nil {
		t.Fatalf("after: %d %s", code, body)
	}
	var ids []string
	for {
		f, err := c.next()
		if err != nil {
			break
		}
		if f.id != "" || f.event != "" {
			ids = append(ids, f.id+f.event)
		}
	}
	if want := []string{strconv.Itoa(len(all) - 1), strconv.Itoa(len(all)), "end"}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("after=%d streamed %v, want %v", len(all)-2, ids, want)
	}
}

// TestEventStreamIsBoundedPerUser opens as many streams as a user may,
// checks that one more is refused with 429 and a message while another
// user's is not, and that a stream closed by its client gives its slot
// back.
func TestEventStreamIsBoundedPerUser(t *testing.T) {
	t.Parallel()
	b, base := streamBundle(t, httpapi.Deps{MaxStreamsPerUser: 2})
	start := func(key string) int64 {
		code, run := b.call(t, key, "POST", "/v1/gb/research", `{"topic":"bounded"}`)
		if code != 202 {
			t.Fatalf("create: %d %v", code, run)
		}
		return int64(run["id"].(float64))
	}
	a, bob := start(b.alice), start(b.bob)
	first, code, body := openStream(t, base, b.alice, a, "", "")
	if first == nil {
		t.Fatalf("first: %d %s", code, body)
	}
	if c, code, body := openStream(t, base, b.alice, a, "", ""); c == nil {
		t.Fatalf("second: %d %s", code, body)
	}
	if c, code, body := openStream(t, base, b.alice, a, "", ""); c != nil || code != http.StatusTooManyRequests ||
		!strings.Contains(body, "too_many_streams") || !strings.Contains(body, "2 event streams open") {
		t.Fatalf("third stream: %d %s; want 429 too_many_streams", code, body)
	}
	if c, code, body := openStream(t, base, b.bob, bob, "", ""); c == nil {
		t.Fatalf("another user's stream: %d %s", code, body)
	}
	first.close()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var open int
		if err := b.agent.Pool().QueryRow(context.Background(), `SELECT count(*) FROM gb_event_streams s
			JOIN gb_agent_research_runs r ON r.user_id = s.user_id WHERE r.id = $1`, a).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open < 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a stream closed by its client kept its slot")
		}
	}
	if c, code, body := openStream(t, base, b.alice, a, "", ""); c == nil {
		t.Fatalf("after one closed: %d %s", code, body)
	}

	// Opened at once, bob's streams still stop at the bound: he has one.
	codes := make(chan int, 6)
	for range 6 {
		go func() {
			_, code, _ := openStream(t, base, b.bob, bob, "", "")
			codes <- code
		}()
	}
	counts := map[int]int{}
	for range 6 {
		counts[<-codes]++
	}
	if counts[http.StatusOK] != 1 || counts[http.StatusTooManyRequests] != 5 {
		t.Fatalf("six streams opened at once beside one: %v; want one 200 and five 429", counts)
	}
}

// TestEventStreamOutlivesTheWriteTimeout serves the stream from a server
// whose write timeout (gb dev's is 60 s) is shorter than the stream: each
// write pushes the deadline on, so heartbeats keep coming past it.
func TestEventStreamOutlivesTheWriteTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewUnstartedServer(httpapi.New(httpapi.Deps{Service: b.agent, Notifier: b.wakes,
		StreamHeartbeat: 100 * time.Millisecond}))
	srv.Config.WriteTimeout = 500 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"long"}`)
	if code != 202 {
		t.Fatalf("create: %d %v", code, run)
	}
	c, code, body := openStream(t, srv.URL, b.alice, int64(run["id"].(float64)), "", "")
	if c == nil {
		t.Fatalf("stream: %d %s", code, body)
	}
	began := time.Now()
	for time.Since(began) < 2*time.Second {
		if _, err := c.next(); err != nil {
			t.Fatalf("the stream ended after %v, past a write timeout of 500ms: %v", time.Since(began), err)
		}
	}
}

// TestEventStreamIsTheOwners checks that another user's key gets 404 on
// the stream of a run, no key 401, a bad Last-Event-ID or after 400, and
// that a deployment that cannot stream answers 501.
func TestEventStreamIsTheOwners(t *testing.T) {
	t.Parallel()
	b, base := streamBundle(t, httpapi.Deps{})
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"mine"}`)
	if code != 202 {
		t.Fatalf("create: %d %v", code, run)
	}
	id := int64(run["id"].(float64))
	for _, tc := range []struct {
		key, last, query string
		want             int
	}{
		{b.bob, "", "", http.StatusNotFound},
		{"", "", "", http.StatusUnauthorized},
		{b.alice, "x", "", http.StatusBadRequest},
		{b.alice, "", "?after=-1", http.StatusBadRequest},
	} {
		if c, code, body := openStream(t, base, tc.key, id, tc.last, tc.query); c != nil || code != tc.want {
			t.Errorf("key %.8q Last-Event-ID %q %s: %d %s; want %d", tc.key, tc.last, tc.query, code, body, tc.want)
		}
	}
	if c, code, _ := openStream(t, base, b.bob, id+1000, "", ""); c != nil || code != http.StatusNotFound {
		t.Errorf("a run that does not exist: %d", code)
	}

	srv := httptest.NewServer(validated(t, httpapi.New(httpapi.Deps{Service: b.agent, NoStream: "this gateway buffers answers"})))
	t.Cleanup(srv.Close)
	if c, code, body := openStream(t, srv.URL, b.alice, id, "", ""); c != nil || code != http.StatusNotImplemented ||
		!strings.Contains(body, "this gateway buffers answers") {
		t.Errorf("a deployment that cannot stream: %d %s; want 501", code, body)
	}
	if c, code, _ := openStream(t, srv.URL, b.bob, id, "", ""); c != nil || code != http.StatusNotFound {
		t.Errorf("another user's run where streams are off: %d; want 404", code)
	}
}

// compact is the JSON value of b as encoding/json writes it, so that
// texts that differ only in spacing and escapes compare equal.
func compact(t testing.TB, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestEventStreamEndsWhenTheTreeIsDeleted deletes a research while its
// stream waits: the stream ends with an end event of status deleted.
func TestEventStreamEndsWhenTheTreeIsDeleted(t *testing.T) {
	t.Parallel()
	b, base := streamBundle(t, httpapi.Deps{})
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"to delete"}`)
	if code != 202 {
		t.Fatalf("create: %d %v", code, run)
	}
	id := int64(run["id"].(float64))
	c, code, body := openStream(t, base, b.alice, id, "", "")
	if c == nil {
		t.Fatalf("stream: %d %s", code, body)
	}
	deleted := false
	for {
		f, err := c.next()
		if err != nil {
			t.Fatalf("the stream dropped without an end: %v", err)
		}
		if f.comment && !deleted {
			if code, _ := b.call(t, b.alice, "DELETE", fmt.Sprintf("/v1/gb/research/%d", id), ""); code != 204 {
				t.Fatalf("delete: %d", code)
			}
			deleted = true
		}
		if f.event != "" {
			if f.event != "end" || !strings.Contains(f.data, `"status":"deleted"`) {
				t.Fatalf("the stream of a deleted tree ended with %s %s", f.event, f.data)
			}
			return
		}
	}
}

// TestEventStreamOfAnEndedTreeEndsAtOnce opens the stream of a tree that
// has ended with Last-Event-ID at its last event: the end comes at once,
// not after a heartbeat's wait for events that cannot come.
func TestEventStreamOfAnEndedTreeEndsAtOnce(t *testing.T) {
	t.Parallel()
	b, base := streamBundle(t, httpapi.Deps{StreamHeartbeat: time.Minute})
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"ended before the stream"}`)
	if code != 202 {
		t.Fatalf("create: %d %v", code, run)
	}
	id := int64(run["id"].(float64))
	if code, _ := b.call(t, b.alice, "POST", fmt.Sprintf("/v1/gb/research/%d/cancel", id), ""); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	all, err := jobs.Events(context.Background(), b.agent.Pool(), id, 0, 1000)
	if err != nil || len(all) == 0 {
		t.Fatalf("the tree's events: %d (%v)", len(all), err)
	}
	start := time.Now()
	c, code, body := openStream(t, base, b.alice, id, strconv.Itoa(len(all)), "")
	if c == nil {
		t.Fatalf("stream: %d %s", code, body)
	}
	for {
		f, err := c.next()
		if err != nil {
			t.Fatalf("the stream dropped without an end: %v", err)
		}
		if f.id != "" && f.event == "" {
			t.Fatalf("event %s again, after Last-Event-ID %d", f.id, len(all))
		}
		if f.event == "end" {
			break
		}
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the end came after %s", took)
	}
}
