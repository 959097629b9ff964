package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"riverqueue.com/riverui"
)

// riverUIPrefix is where gb dev --river-ui serves River UI.
const riverUIPrefix = "/riverui/"

// checkLoopback refuses an address that is not a loopback one: River UI
// shows, retries and cancels every user's jobs, and has no sign-in.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--addr %q is not HOST:PORT: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return usageErrorf("--river-ui serves every user's jobs without sign-in, so it needs a loopback --addr "+
			"such as 127.0.0.1:8080 or [::1]:8080, not %q", addr)
	}
	return nil
}

// mountRiverUI serves River UI at riverUIPrefix in front of the API, for
// requests from a loopback address to a loopback Host name, and never for
// a cross-origin browser request that would change something
// (riverUIGuard).
func (s *stack) mountRiverUI(ctx context.Context) error {
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(s.agent.River(), nil),
		Logger:    s.logger.With("component", "riverui"),
		Prefix:    riverUIPrefix,
	})
	if err != nil {
		return fmt.Errorf("error setting up River UI: %w", err)
	}
	if err := h.Start(ctx); err != nil {
		return fmt.Errorf("error starting River UI: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(riverUIPrefix, riverUIGuard(h))
	mux.Handle("/", s.api)
	s.api = mux
	return nil
}

// riverUIGuard lets a request reach River UI only when it comes from this
// machine (403 otherwise), names this machine in its Host header (421
// otherwise: a page on another name that resolves here, as in DNS
// rebinding, is not River UI's page) and, for a method that changes
// something, is not a cross-origin browser request (403, by
// http.CrossOriginProtection: a page the operator visits cannot cancel,
// retry or delete jobs).
func riverUIGuard(next http.Handler) http.Handler {
	csrf := http.NewCrossOriginProtection()
	csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		riverUIRefuse(w, http.StatusForbidden, "cross_origin", "River UI refuses cross-origin requests")
	}))
	guarded := csrf.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			riverUIRefuse(w, http.StatusForbidden, "forbidden", "River UI answers loopback clients only")
			return
		}
		if !loopbackHost(r) {
			riverUIRefuse(w, http.StatusMisdirectedRequest, "misdirected", "River UI answers requests to localhost, 127.0.0.1 or [::1] only")
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether the request's Host header is localhost or
// a loopback address, with the port the request came in on when the
// server knows it (a Host without a port means port 80).
func loopbackHost(r *http.Request) bool {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(r.Host, "["), "]"), "80"
	}
	if !strings.EqualFold(host, "localhost") {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Unmap().IsLoopback() {
			return false
		}
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true
	}
	ap, err := netip.ParseAddrPort(local.String())
	return err != nil || strconv.Itoa(int(ap.Port())) == port
}

// riverUIRefuse writes an API-style JSON error.
func riverUIRefuse(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"error":{"code":%q,"message":%q}}`+"\n", code, message)
}
