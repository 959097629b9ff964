package main

import (
	"cmp"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

// This file holds gb webhooks listen: a local receiver to try webhooks
// with, which verifies each delivery as Standard Webhooks says (the
// signature over "id.timestamp.body" with the user's secret, a timestamp
// within the tolerance) and prints what it got.

// listenMaxBody is the largest body the receiver reads; gb's are small.
const listenMaxBody = 1 << 20

func webhooksListenCmd() *cobra.Command {
	var (
		addr      string
		secret    string
		tolerance time.Duration
		count     int
	)
	cmd := &cobra.Command{
		Use:   "listen",
		Short: "Receive your webhooks on a local address and print each verified event",
		Long: `Listens on a loopback address and prints one line per webhook: the event, its
research and what it took when the signature is good (Standard Webhooks, with your
signing secret), or a line saying why it was rejected (401 for a bad signature, 400 for
a missing header or a timestamp outside --tolerance). A repeat of a webhook-id already
printed is answered 200 and said to be a repeat. The secret is GB_WEBHOOK_SECRET, or
--secret, or else your own read from the API (gb webhooks secret show).

The API refuses webhook URLs on loopback addresses unless GB_FETCH_ALLOW lets them
through, so try it with a local stack started that way.`,
		Example: `  GB_FETCH_ALLOW=127.0.0.1/32:9000 gb dev &
  gb webhooks listen --addr 127.0.0.1:9000 &
  gb webhooks set http://127.0.0.1:9000/
  gb research start "How does sync.WaitGroup work?"`,
		Args: args(0, 0, "no arguments"),
		PreRunE: func(*cobra.Command, []string) error {
			if count < 0 {
				return usageErrorf("--count must be 0 (no end) or more (got %d)", count)
			}
			if tolerance <= 0 {
				return usageErrorf("--tolerance must be above 0 (got %s)", tolerance)
			}
			return checkListenAddr(addr)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := listenSecret(cmd, secret)
			if err != nil {
				return err
			}
			return listenWebhooks(cmd.Context(), addr, &hookVerifier{secret: key, tolerance: tolerance, now: time.Now},
				count, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:9000", "loopback address to listen on (port 0: any free port)")
	f.StringVar(&secret, "secret", "", "the signing secret, whsec_… (default: GB_WEBHOOK_SECRET, else yours from the API)")
	f.DurationVar(&tolerance, "tolerance", 5*time.Minute, "how far a webhook's timestamp may be from now")
	f.IntVar(&count, "count", 0, "stop after this many verified events (default 0: until interrupted)")
	return cmd
}

// checkListenAddr checks that addr is HOST:PORT on a loopback host: the
// receiver is for trying webhooks on one's own machine.
func checkListenAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--addr %q is not HOST:PORT: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
		return usageErrorf("--addr %q is not a loopback address: gb webhooks listen receives on this machine only (use 127.0.0.1:PORT)", addr)
	}
	return nil
}

// listenSecret is the secret to verify with: --secret, GB_WEBHOOK_SECRET,
// or the user's own from the API.
func listenSecret(cmd *cobra.Command, flag string) (string, error) {
	s := flag
	if s == "" {
		s = os.Getenv("GB_WEBHOOK_SECRET")
	}
	if s == "" {
		c, err := newAPIClient()
		if err != nil {
			return "", fmt.Errorf("no signing secret: give --secret or GB_WEBHOOK_SECRET, or an API key to read yours: %w", err)
		}
		var ws jobs.WebhookSecret
		if err := c.do(cmd.Context(), "GET", "/v1/gb/webhooks/secret", nil, &ws); err != nil {
			return "", err
		}
		s = ws.Secret
	}
	if _, err := jobs.SignWebhook(s, "msg_check", 0, nil); err != nil {
		return "", usageErrorf("the signing secret is not one gb makes: %w", err)
	}
	return s, nil
}

// hookVerifier checks a delivery's Standard Webhooks headers.
type hookVerifier struct {
	secret    string
	tolerance time.Duration
	now       func() time.Time
}

// verify reports why a delivery is not the user's, with the status to
// answer, or "" when it is.
func (v *hookVerifier) verify(h http.Header, body []byte) (status int, why string) {
	id, ts, sigs := h.Get(jobs.HeaderWebhookID), h.Get(jobs.HeaderWebhookTimestamp), h.Get(jobs.HeaderWebhookSignature)
	if id == "" || ts == "" || sigs == "" {
		return http.StatusBadRequest, "missing webhook-id, webhook-timestamp or webhook-signature"
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return http.StatusBadRequest, "webhook-timestamp is not Unix seconds"
	}
	if off := v.now().Sub(time.Unix(sec, 0)); off.Abs() > v.tolerance {
		return http.StatusBadRequest, fmt.Sprintf("webhook-timestamp is %s off, beyond --tolerance %s (a replay?)",
			off.Abs().Round(time.Second), v.tolerance)
	}
	want, err := jobs.SignWebhook(v.secret, id, sec, body)
	if err != nil {
		return http.StatusInternalServerError, err.Error()
	}
	for _, s := range strings.Fields(sigs) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return 0, ""
		}
	}
	return http.StatusUnauthorized, "bad signature: not signed with your secret (rotated since it was sent?)"
}

// hookPrinter answers deliveries and prints a line for each.
type hookPrinter struct {
	v     *hookVerifier
	mu    sync.Mutex
	out   io.Writer
	seen  map[string]bool
	count int // verified events printed
	max   int
	done  chan struct{}
}

func (p *hookPrinter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "webhooks are POSTed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, listenMaxBody))
	if err != nil {
		p.line("rejected %s: the body is unreadable or over %d bytes", r.RemoteAddr, listenMaxBody)
		http.Error(w, "body unreadable or too large", http.StatusRequestEntityTooLarge)
		return
	}
	id := r.Header.Get(jobs.HeaderWebhookID)
	if status, why := p.v.verify(r.Header, body); status != 0 {
		p.line("rejected webhook-id %s: %s (answered %d)", oneLine(cmp.Or(id, "-")), why, status)
		http.Error(w, why, status)
		return
	}
	p.mu.Lock()
	repeat := p.seen[id]
	p.seen[id] = true
	p.mu.Unlock()
	if repeat {
		p.line("repeat of %s, already printed (answered 200)", oneLine(id))
		w.WriteHeader(http.StatusOK)
		return
	}
	p.line("%s", eventLine(id, body))
	w.WriteHeader(http.StatusOK)
	p.mu.Lock()
	p.count++
	if p.max > 0 && p.count == p.max {
		close(p.done)
	}
	p.mu.Unlock()
}

// line prints one line with the time it was printed.
func (p *hookPrinter) line(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// eventLine says what a verified delivery holds: its event, research,
// status, error and usage, each made inert. A body that is not gb's
// payload is said to be so.
func eventLine(id string, body []byte) string {
	var ev jobs.WebhookPayload
	if err := json.Unmarshal(body, &ev); err != nil || ev.Type == "" {
		return fmt.Sprintf("verified %s, but its body is not a gb event: %s", oneLine(id), fit(string(body), 200))
	}
	d := ev.Data
	s := fmt.Sprintf("%s research %d %s · %s · %s, %d steps, %s · $%.4f · %s", oneLine(ev.Type), d.ID, oneLine(d.Status),
		oneLine(id), count(d.Usage.Runs, "agent"), d.Usage.Steps, count(d.Usage.Tokens, "token"), d.Usage.CostUSD, oneLine(d.Path))
	if d.Error != "" {
		s += " · error: " + fit(d.Error, 200)
	}
	return s
}

// listenWebhooks serves deliveries on addr until ctx ends or max verified
// events (0: no end) were printed.
func listenWebhooks(ctx context.Context, addr string, v *hookVerifier, max int, out, errOut io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	p := &hookPrinter{v: v, out: out, seen: map[string]bool{}, max: max, done: make(chan struct{})}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(errOut, "listening on %s: point your webhooks here (gb webhooks set %s, or --webhook-url on start)\n", url, url)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case <-p.done:
	case err := <-served:
		return fmt.Errorf("serving webhooks: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stopping the receiver: %w", err)
	}
	return nil
}
