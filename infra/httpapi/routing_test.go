package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// raw sends a request and returns the answer with its whole body, without
// following redirects.
func (b *testBundle) raw(t testing.TB, method, path string, header http.Header, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// jsonError decodes an error body, failing the test when it is not one.
func jsonError(t *testing.T, resp *http.Response, data []byte) (code, msg string) {
	t.Helper()
	var body struct {
		Error struct{ Code, Message string }
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", resp.Request.Method, resp.Request.URL.Path, ct)
	}
	if err := json.Unmarshal(data, &body); err != nil || body.Error.Code == "" || body.Error.Message == "" {
		t.Errorf("%s %s: %d body %q is not a JSON error (%v)", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, data, err)
	}
	return body.Error.Code, body.Error.Message
}

func TestWrongMethodAnswers405WithAllowAndJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct{ method, path, allow string }{
		{"PUT", "/v1/gb/research", "GET, HEAD, POST"},
		{"PATCH", "/v1/gb/research/1", "DELETE, GET, HEAD"},
		{"GET", "/v1/gb/research/1/cancel", "POST"},
		{"DELETE", "/v1/gb/research/1/tree", "GET, HEAD"},
		{"POST", "/v1/gb/research/1/events", "GET, HEAD"},
		{"PUT", "/v1/gb/research/1/messages", "GET, HEAD, POST"},
		{"get", "/v1/gb/research", "GET, HEAD, POST"},
		{"POST", "/healthz", "GET, HEAD"},
	} {
		resp, data := b.raw(t, c.method, c.path, http.Header{"Authorization": {"Bearer " + b.alice}}, "")
		code, msg := jsonError(t, resp, data)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow ||
			code != "method_not_allowed" || !strings.Contains(msg, c.allow) {
			t.Errorf("%s %s: got %d Allow %q %s, want 405 Allow %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), data, c.allow)
		}
	}
}

func TestRouterAnswersAreJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	auth := http.Header{"Authorization": {"Bearer " + b.alice}}
	for _, c := range []struct {
		method, path string
		status       int
		code         string
		location     string
	}{
		{"GET", "/v1/gb/nothing", http.StatusNotFound, "not_found", ""},
		{"GET", "/v1/gb/research/1/", http.StatusNotFound, "not_found", ""},
		{"POST", "/", http.StatusNotFound, "not_found", ""},
		{"GET", "//v1/gb/research", http.StatusTemporaryRedirect, "redirect", "/v1/gb/research"},
		{"POST", "/v1/gb/./research", http.StatusTemporaryRedirect, "redirect", "/v1/gb/research"},
		{"DELETE", "/v1/gb/x/../research/7", http.StatusTemporaryRedirect, "redirect", "/v1/gb/research/7"},
	} {
		resp, data := b.raw(t, c.method, c.path, auth, "")
		code, _ := jsonError(t, resp, data)
		if resp.StatusCode != c.status || code != c.code || resp.Header.Get("Location") != c.location {
			t.Errorf("%s %s: got %d %s Location %q, want %d %s Location %q", c.method, c.path,
				resp.StatusCode, data, resp.Header.Get("Location"), c.status, c.code, c.location)
		}
	}
	// Headers over the API's limit, but under the server's, get a JSON 431.
	big := http.Header{"Authorization": {"Bearer " + b.alice}, "X-Padding": {strings.Repeat("p", 40<<10)}}
	resp, data := b.raw(t, "GET", "/v1/gb/research", big, "")
	if code, _ := jsonError(t, resp, data); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || code != "headers_too_large" {
		t.Errorf("big headers: got %d %s, want 431 headers_too_large", resp.StatusCode, data)
	}
}

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, h := range []string{"Bearer " + b.alice, "bearer " + b.alice, "BEARER " + b.alice, "bEaReR  " + b.alice} {
		if resp, data := b.raw(t, "GET", "/v1/gb/research", http.Header{"Authorization": {h}}, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("%.9q…: got %d %s, want 200", h, resp.StatusCode, data)
		}
	}
	for _, h := range []string{"", "Bearer", "Bearer ", "Bearer" + b.alice, "Basic " + b.alice, "Bearer x" + b.alice, b.alice} {
		resp, data := b.raw(t, "GET", "/v1/gb/research", http.Header{"Authorization": {h}}, "")
		if code, _ := jsonError(t, resp, data); resp.StatusCode != http.StatusUnauthorized || code != "unauthorized" {
			t.Errorf("%.9q…: got %d %s, want 401", h, resp.StatusCode, data)
		}
	}
}
