package bedrock

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// exchange is what one call learned below the SDK: whether the request was
// handed to the HTTP client and written to the connection, and the status
// of the response, if one came.
type exchange struct {
	called atomic.Bool
	sent   atomic.Bool
	status atomic.Int32
}

type exchangeKey struct{}

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

// reached reports whether the request may have reached Bedrock.
func (ex *exchange) reached() bool { return ex.sent.Load() || ex.status.Load() != 0 }

// doer sends an HTTP request: an *http.Client, or the SDK's buildable one.
type doer interface {
	Do(*http.Request) (*http.Response, error)
}

// recordingDoer is the SDK's HTTP client: it records each response's
// status in the call's exchange.
type recordingDoer struct {
	client doer
}

// Do implements the SDK's HTTPClient.
func (d recordingDoer) Do(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex != nil {
		ex.called.Store(true)
	}
	resp, err := d.client.Do(req)
	if ex != nil && resp != nil {
		ex.status.Store(int32(resp.StatusCode))
	}
	return resp, err
}
