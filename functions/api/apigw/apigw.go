// Package apigw serves an http.Handler to API Gateway HTTP APIs (payload
// format 2.0): it turns each event into an *http.Request and the handler's
// answer into the event's response.
//
// It may import nothing of the project; it knows only net/http and the
// aws-lambda-go event types.
package apigw

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// defaultStage is the stage whose name is not part of the request path.
const defaultStage = "$default"

// Handler returns the Lambda handler that serves h.
func Handler(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		req, err := NewRequest(ctx, ev)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		w := NewResponseWriter()
		h.ServeHTTP(w, req)
		return w.Response(), nil
	}
}

// NewRequest builds the request an HTTP API event stands for. The path is
// the raw path, so path parameters are matched by the handler's own router;
// the name of a stage other than $default is taken off its front. A base64
// body is decoded; cookies, which the API does not use, are put back in a
// Cookie header.
func NewRequest(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (*http.Request, error) {
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		return nil, errors.New("event has no requestContext.http.method; is it an HTTP API (payload 2.0) event?")
	}
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	if stage := ev.RequestContext.Stage; stage != "" && stage != defaultStage {
		if rest, ok := strings.CutPrefix(path, "/"+stage); ok && (rest == "" || rest[0] == '/') {
			path = cmp.Or(rest, "/")
		}
	}
	target := path
	if ev.RawQueryString != "" {
		target += "?" + ev.RawQueryString
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, fmt.Errorf("error parsing request path %q: %w", target, err)
	}

	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		body, err = base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, fmt.Errorf("error decoding base64 request body: %w", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("error building request: %w", err)
	}
	req.RequestURI = u.RequestURI()
	req.ContentLength = int64(len(body))
	for name, value := range ev.Headers {
		// API Gateway joins repeated headers with commas.
		req.Header.Set(name, value)
	}
	if len(ev.Cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	req.Host = cmp.Or(req.Header.Get("Host"), ev.RequestContext.DomainName)
	req.URL.Host = req.Host
	if ip := ev.RequestContext.HTTP.SourceIP; ip != "" {
		req.RemoteAddr = ip
	}
	return req, nil
}

// ResponseWriter records a handler's answer for Response.
type ResponseWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// NewResponseWriter returns an empty ResponseWriter.
func NewResponseWriter() *ResponseWriter {
	return &ResponseWriter{header: http.Header{}}
}

// Header implements http.ResponseWriter.
func (w *ResponseWriter) Header() http.Header { return w.header }

// WriteHeader implements http.ResponseWriter; only the first call counts.
func (w *ResponseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// Write implements http.ResponseWriter.
func (w *ResponseWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Response returns the recorded answer as an HTTP API response: repeated
// headers joined with commas, Set-Cookie headers as cookies, and a body
// that is not UTF-8 text sent as base64.
func (w *ResponseWriter) Response() events.APIGatewayV2HTTPResponse {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	if w.header.Get("Content-Type") == "" && w.body.Len() > 0 {
		w.header.Set("Content-Type", http.DetectContentType(w.body.Bytes()))
	}
	res := events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{}}
	names := make([]string, 0, len(w.header))
	for name := range w.header {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		values := w.header[name]
		if name == "Set-Cookie" {
			res.Cookies = append(res.Cookies, values...)
			continue
		}
		res.Headers[name] = strings.Join(values, ",")
	}
	if isText(w.header.Get("Content-Type"), w.body.Bytes()) {
		res.Body = w.body.String()
	} else {
		res.Body = base64.StdEncoding.EncodeToString(w.body.Bytes())
		res.IsBase64Encoded = true
	}
	if _, ok := res.Headers["Content-Length"]; !ok {
		res.Headers["Content-Length"] = strconv.Itoa(w.body.Len())
	}
	return res
}

// isText says whether a body can go in the response as it is.
func isText(contentType string, body []byte) bool {
	if len(body) == 0 {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	text := strings.HasPrefix(mt, "text/") || mt == "application/json" ||
		strings.HasSuffix(mt, "+json") || mt == "application/xml" || strings.HasSuffix(mt, "+xml") ||
		mt == "application/javascript"
	return text && utf8.Valid(body)
}
