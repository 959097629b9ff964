package apigw_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/gbresearch/gb/functions/api/apigw"
)

// loadEvent reads a fixture strictly: a field the event type does not know
// means the fixture is not a real HTTP API event.
func loadEvent(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ev events.APIGatewayV2HTTPRequest
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}

func TestRequestFromEvent(t *testing.T) {
	t.Parallel()
	ev := loadEvent(t, "post-base64.json")
	var seen *http.Request
	var body []byte
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/gb/research/{id}/messages", func(w http.ResponseWriter, r *http.Request) {
		seen = r
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("X-Trace", "a")
		w.Header().Add("X-Trace", "b")
		http.SetCookie(w, &http.Cookie{Name: "seen", Value: "1"})
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":`+r.PathValue("id")+`}`)
	})
	res, err := apigw.Handler(mux)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if seen == nil {
		t.Fatalf("route not matched: %+v", res)
	}
	if got := seen.PathValue("id"); got != "42" {
		t.Errorf("path value id = %q", got)
	}
	if got := seen.URL.Query()["tag"]; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("query tag = %v", got)
	}
	if string(body) != `{"text":"👋 hello"}` || seen.ContentLength != int64(len(body)) {
		t.Errorf("body %q (length %d)", body, seen.ContentLength)
	}
	if seen.Header.Get("Authorization") != "Bearer gb_test" || seen.Header.Get("X-Multi") != "one,two" {
		t.Errorf("headers %v", seen.Header)
	}
	if c, err := seen.Cookie("theme"); err != nil || c.Value != "dark" {
		t.Errorf("cookie theme: %v %v", c, err)
	}
	if seen.Host != "abc123.execute-api.eu-west-1.amazonaws.com" || seen.RemoteAddr != "203.0.113.7" {
		t.Errorf("host %q remote %q", seen.Host, seen.RemoteAddr)
	}
	if seen.RequestURI != "/v1/gb/research/42/messages?wait=1&tag=a&tag=b" {
		t.Errorf("request URI %q", seen.RequestURI)
	}

	want := events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusCreated,
		Headers: map[string]string{"Content-Type": "application/json", "X-Trace": "a,b",
			"Content-Length": "9"},
		Body:    `{"id":42}`,
		Cookies: []string{"seen=1"},
	}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("response\n got %+v\nwant %+v", res, want)
	}
}

func TestStageAndEscapedPath(t *testing.T) {
	t.Parallel()
	ev := loadEvent(t, "get-staged.json")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/gb/research/{id}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.PathValue("id"))
	})
	res, err := apigw.Handler(mux)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	// The stage is taken off the path, and an escaped slash stays inside
	// its segment.
	if res.StatusCode != http.StatusOK || res.Body != "7/8" {
		t.Fatalf("got %d %q", res.StatusCode, res.Body)
	}
	if res.Headers["Content-Type"] != "text/plain; charset=utf-8" || res.IsBase64Encoded {
		t.Fatalf("headers %v base64 %v", res.Headers, res.IsBase64Encoded)
	}
}

func TestBinaryAndEmptyResponses(t *testing.T) {
	t.Parallel()
	ev := loadEvent(t, "get-staged.json")
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	res, err := apigw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(png)
	}))(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsBase64Encoded || res.Body != base64.StdEncoding.EncodeToString(png) || res.Headers["Content-Type"] != "image/png" {
		t.Fatalf("binary response: %+v", res)
	}

	res, err = apigw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusNoContent || res.Body != "" || res.IsBase64Encoded {
		t.Fatalf("empty response: %+v", res)
	}
}

func TestRejectsEventsThatAreNotHTTPAPI(t *testing.T) {
	t.Parallel()
	_, err := apigw.NewRequest(context.Background(), events.APIGatewayV2HTTPRequest{RawPath: "/x"})
	if err == nil {
		t.Fatal("an event without a method should be refused")
	}
	ev := loadEvent(t, "post-base64.json")
	ev.Body = "not base64!"
	if _, err := apigw.NewRequest(context.Background(), ev); err == nil {
		t.Fatal("a bad base64 body should be refused")
	}
}
