package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/gbresearch/gb/functions/api/apigw"
	"github.com/gbresearch/gb/infra/httpapi"
)

// TestServedThroughTheAPIFunction serves the dashboard as the API Lambda
// does (httpapi.New behind the API Gateway adapter), on a named stage: /ui
// redirects relative to itself, and the assets come back as text with
// their headers.
func TestServedThroughTheAPIFunction(t *testing.T) {
	t.Parallel()
	fn := apigw.Handler(httpapi.New(httpapi.Deps{}))
	call := func(path string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		var ev events.APIGatewayV2HTTPRequest
		ev.RawPath = "/prod" + path
		ev.RequestContext.Stage = "prod"
		ev.RequestContext.HTTP.Method = "GET"
		res, err := fn(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call("/ui"); res.StatusCode != http.StatusFound || res.Headers["Location"] != "ui/index.html" {
		t.Errorf("GET /prod/ui: %d to %q", res.StatusCode, res.Headers["Location"])
	}
	for path, holds := range map[string]string{"/ui/index.html": "js/app.js", "/ui/js/api.js": "sessionStorage"} {
		res := call(path)
		if res.StatusCode != http.StatusOK || res.IsBase64Encoded || !strings.Contains(res.Body, holds) {
			t.Errorf("GET /prod%s: %d, base64 %v", path, res.StatusCode, res.IsBase64Encoded)
		}
		if !strings.Contains(res.Headers["Content-Security-Policy"], "script-src 'self'") || res.Headers["X-Content-Type-Options"] != "nosniff" {
			t.Errorf("GET /prod%s: headers %v", path, res.Headers)
		}
	}
}
