package fetch

import (
	"cmp"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// NewTransport returns the guarded transport of cfg: its dialer resolves
// each host itself and dials only the addresses the guard accepts (see
// the package doc), and it uses no proxy, which would be dialled instead.
// The Fetcher and the WebhookClient use it; it follows no redirect itself
// (an http.Client's CheckRedirect decides).
func NewTransport(cfg Config) *http.Transport {
	g := newGuard(cfg)
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 15 * time.Second,
	}
}

// newGuard is the guarded dialer of cfg: its policy (ports 80 and 443 by
// default), resolver and dial function.
func newGuard(cfg Config) guardedDialer {
	p := policy{ports: cfg.Ports, allow: cfg.Allow}
	if len(p.ports) == 0 {
		p.ports = []uint16{80, 443}
	}
	var resolver Resolver = net.DefaultResolver
	if cfg.Resolver != nil {
		resolver = cfg.Resolver
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second, Control: p.control}).DialContext
	}
	return guardedDialer{policy: p, resolver: resolver, dial: dial}
}

// warnAllow logs msg as a warning, with the rules, when cfg has an
// allow-list.
func warnAllow(cfg Config, msg string) {
	if len(cfg.Allow) == 0 {
		return
	}
	rules := make([]string, len(cfg.Allow))
	for i, r := range cfg.Allow {
		rules[i] = r.String()
	}
	cmp.Or(cfg.Logger, slog.Default()).Warn(msg, slog.String("var", EnvAllow), slog.String("allow", strings.Join(rules, ",")))
}
