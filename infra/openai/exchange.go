package openai

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// exchange is what one call learned below go-openai, which keeps the
// status and headers of an error response to itself: whether the request
// was handed to the HTTP client and written to the connection, and the
// status and headers of the response, if one came.
//
// Complete makes one exchange per call and reads it once the call is over;
// only sent is written from another goroutine (the transport's writer).
type exchange struct {
	// requestID is sent as X-Client-Request-Id when set.
	requestID string
	called    bool
	sent      atomic.Bool
	status    int
	header    http.Header
}

type exchangeKey struct{}

// clientRequestIDHeader names a call for the provider's logs, as OpenAI's
// API lets a client do (llm.Request.ID).
const clientRequestIDHeader = "X-Client-Request-Id"

// attach returns ctx carrying the exchange and a trace that marks it sent
// once the request is written to the connection.
func (ex *exchange) attach(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, exchangeKey{}, ex)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				ex.sent.Store(true)
			}
		},
	})
}

// reached reports whether the request may have reached the provider: it
// was written to the connection, or an answer came back.
func (ex *exchange) reached() bool { return ex.sent.Load() || ex.status != 0 }

// recordingDoer is the HTTP client given to go-openai: it records the
// status and headers of every response in the call's exchange.
type recordingDoer struct {
	client *http.Client
}

// Do implements go-openai's HTTPDoer.
func (d recordingDoer) Do(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex != nil {
		ex.called = true
		if ex.requestID != "" {
			req.Header.Set(clientRequestIDHeader, ex.requestID)
		}
	}
	resp, err := d.client.Do(req)
	if ex != nil && resp != nil {
		ex.status, ex.header = resp.StatusCode, resp.Header.Clone()
	}
	return resp, err
}
