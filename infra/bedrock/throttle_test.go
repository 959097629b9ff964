package bedrock

import (
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Throttles in a row back off: each doubles the wait, with jitter over its
// upper half, up to a minute.
func TestThrottleWaitBacksOff(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		7: time.Minute, 40: time.Minute} {
		for range 50 {
			if d := throttleWait(n); d < want/2 || d > want {
				t.Fatalf("throttle %d: wait %s, want between %s and %s", n, d, want/2, want)
			}
		}
	}
}

// The default HTTP client is the SDK's buildable client, keeping enough
// idle connections to the endpoint for the calls a worker makes at once.
func TestDefaultHTTPClientKeepsIdleConnections(t *testing.T) {
	t.Parallel()
	c, ok := Config{}.httpClient().(*awshttp.BuildableClient)
	if !ok {
		t.Fatalf("client %T, want the SDK's BuildableClient", Config{}.httpClient())
	}
	if tr := c.GetTransport(); tr.MaxIdleConnsPerHost != MaxIdleConnsPerHost || tr.MaxIdleConns < MaxIdleConnsPerHost ||
		tr.TLSHandshakeTimeout == 0 {
		t.Errorf("transport: %d idle per host, %d idle, handshake timeout %s", tr.MaxIdleConnsPerHost, tr.MaxIdleConns,
			tr.TLSHandshakeTimeout)
	}
}
