package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"

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
// requests from a loopback address only.
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
	mux.Handle(riverUIPrefix, loopbackOnly(h))
	mux.Handle("/", s.api)
	s.api = mux
	return nil
}

// loopbackOnly answers 403 to a request that does not come from this
// machine.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":{"code":"forbidden","message":"River UI answers loopback clients only"}}` + "\n"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
