package fetch

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// WebhookClient posts webhook deliveries through the same guard as the
// Fetcher: jobs.WebhookSender. A delivery follows no redirect (the
// redirect is its answer). It is safe for concurrent use.
type WebhookClient struct {
	client  *http.Client
	guard   guardedDialer
	timeout time.Duration
	agent   string
}

var _ jobs.WebhookSender = (*WebhookClient)(nil)

// webhookAnswerBytes is how much of an answer's body is read (and
// dropped), so that its connection may be reused.
const webhookAnswerBytes = 64 << 10

// NewWebhookClient returns the WebhookClient of cfg (its Timeout bounds a
// delivery), logging a warning when an allow-list is on.
func NewWebhookClient(cfg Config) *WebhookClient {
	warnAllow(cfg, "webhooks: the allow-list is on: deliveries may reach these networks and ports whatever they are")
	return &WebhookClient{
		client: &http.Client{Transport: NewTransport(cfg),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		guard:   newGuard(cfg),
		timeout: cmp.Or(cfg.Timeout, TimeoutDefault),
		agent:   cmp.Or(cfg.UserAgent, UserAgentDefault),
	}
}

// webhookRefusal is a refused delivery address: it matches both
// jobs.ErrWebhookRefused and ErrRefused.
type webhookRefusal struct{ re *RefusedError }

// Error says what was refused and why, without the URL's query.
func (e *webhookRefusal) Error() string { return e.re.Target + " is refused: " + e.re.Reason }

// Unwrap makes errors.Is match jobs.ErrWebhookRefused and ErrRefused.
func (e *webhookRefusal) Unwrap() []error { return []error{jobs.ErrWebhookRefused, e.re} }

// asRefusal turns a guard's refusal in err into a webhookRefusal, and
// returns other errors as they are.
func asRefusal(err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		return &webhookRefusal{re}
	}
	return err
}

// parseWebhookURL parses raw and checks it as every fetch is checked
// (scheme, credentials, host form); the query, which may hold a token, is
// left out of the errors.
func parseWebhookURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &webhookRefusal{&RefusedError{Target: "the webhook URL", Reason: "it is not a URL"}}
	}
	shown := *u
	shown.RawQuery, shown.Fragment = "", ""
	if err := checkURL(&shown); err != nil {
		return nil, asRefusal(err)
	}
	return u, nil
}

// Check implements jobs.WebhookSender: it resolves the URL's host and
// refuses it when the guard accepts none of its addresses. A host that
// does not exist is refused; another failure to resolve is returned as
// it is (no refusal).
func (c *WebhookClient) Check(ctx context.Context, raw string) error {
	u, err := parseWebhookURL(raw)
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return &webhookRefusal{&RefusedError{Target: u.Host, Reason: fmt.Sprintf("bad port %q", port)}}
	}
	ips, name, err := c.guard.resolve(ctx, u.Hostname())
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return &webhookRefusal{&RefusedError{Target: u.Hostname(), Reason: "no such host"}}
	}
	if err != nil {
		return err
	}
	var first error
	for _, ip := range ips {
		err := c.guard.policy.check(name, ip, uint16(p))
		if err == nil {
			return nil
		}
		first = cmp.Or(first, err)
	}
	return asRefusal(first)
}

// Post implements jobs.WebhookSender: it POSTs body as JSON with the
// headers, within the client's timeout, and reads a little of the answer.
func (c *WebhookClient) Post(ctx context.Context, raw string, header map[string]string, body []byte) (int, error) {
	u, err := parseWebhookURL(raw)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("cannot build the request to %s: %w", u.Host, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", c.agent)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message holds the whole URL
		}
		if errors.Is(err, ErrRefused) {
			return 0, asRefusal(err)
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return 0, fmt.Errorf("POST to %s: no answer within %s: %w", u.Host, c.timeout, err)
		}
		return 0, fmt.Errorf("POST to %s: %w", u.Host, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, webhookAnswerBytes))
	return resp.StatusCode, nil
}
