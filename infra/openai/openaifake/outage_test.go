package openaifake

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/fakeprovider"
)

// send posts a chat request with the test key and returns the response's
// status, or the error of a request that got none.
func send(t *testing.T, ctx context.Context, srv *Server) (int, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Each outage mode fails every request for its time, unbilled and before
// the rate limits, and the server answers again once it is over.
func TestOutageModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode   fakeprovider.OutageMode
		status int
		kind   string
		body   string
	}{
		{fakeprovider.OutageUnavailable, http.StatusServiceUnavailable, KindOutageUnavailable, `"type":"server_error"`},
		{fakeprovider.OutageOverloaded, 529, KindOutageOverloaded, `"type":"overloaded_error"`},
		{fakeprovider.OutageDrop, 0, KindOutageDropped, ""},
		{fakeprovider.OutageHang, 0, KindOutageHang, ""},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			srv, clk := start(t, Config{RPM: 1})
			if err := srv.StartOutage(tc.mode, time.Minute); err != nil {
				t.Fatal(err)
			}
			for range 3 { // more than the RPM: an outage is not rate limited
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				status, body, err := send(t, ctx, srv)
				cancel()
				switch {
				case tc.status != 0 && (err != nil || status != tc.status || !strings.Contains(string(body), tc.body)):
					t.Fatalf("got %d %s (%v), want %d with %s", status, body, err, tc.status, tc.body)
				case tc.mode == fakeprovider.OutageDrop && (err == nil || errors.Is(err, context.DeadlineExceeded)):
					t.Fatalf("got %d %v, want the connection dropped", status, err)
				case tc.mode == fakeprovider.OutageHang && !errors.Is(err, context.DeadlineExceeded):
					t.Fatalf("got %d %v, want the request held until the client gave up", status, err)
				}
			}
			st := srv.Stats()
			if st.Outage != 3 || st.Billed != 0 || st.Refused429RPM != 0 {
				t.Errorf("stats %+v: want 3 requests failed by the outage, none billed or rate limited", st)
			}
			for _, ev := range srv.Log() {
				if ev.Kind != tc.kind {
					t.Errorf("event %+v: want kind %s", ev, tc.kind)
				}
			}
			clk.Advance(time.Minute)
			if status, body, err := send(t, context.Background(), srv); err != nil || status != http.StatusOK {
				t.Errorf("after the outage: %d %s %v, want an answer", status, body, err)
			}
		})
	}
}

// The switch is served over HTTP: on for a time, read, off; a bad body
// is refused saying what is allowed.
func TestOutageControlEndpoint(t *testing.T) {
	t.Parallel()
	srv, _ := start(t, Config{Now: time.Now})
	do := func(method, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.ControlURL(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do(http.MethodPost, `{"mode":"529","seconds":60}`); code != http.StatusOK ||
		!strings.Contains(body, `"active":true`) || !strings.Contains(body, `"until"`) {
		t.Fatalf("POST: %d %s", code, body)
	}
	if st := srv.Outage(); !st.Active || st.Mode != fakeprovider.OutageOverloaded {
		t.Fatalf("state %+v: want a 529 outage", st)
	}
	if status, _, err := send(t, context.Background(), srv); err != nil || status != 529 {
		t.Fatalf("during the outage: %d %v, want 529", status, err)
	}
	if code, body := do(http.MethodDelete, ""); code != http.StatusOK || !strings.Contains(body, `"active":false`) {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if status, _, err := send(t, context.Background(), srv); err != nil || status != http.StatusOK {
		t.Fatalf("after DELETE: %d %v, want an answer", status, err)
	}
	if code, body := do(http.MethodPost, `{"mode":"sometimes"}`); code != http.StatusBadRequest ||
		!strings.Contains(body, "drop") {
		t.Errorf("a bad mode: %d %s, want a 400 naming the modes", code, body)
	}
	if code, _ := do(http.MethodPut, ""); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d, want 405", code)
	}
}
