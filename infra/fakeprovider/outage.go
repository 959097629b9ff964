package fakeprovider

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// OutageMode is how a fake fails every request while an outage lasts.
type OutageMode string

// The outage modes.
const (
	// OutageUnavailable answers 503 Service Unavailable.
	OutageUnavailable OutageMode = "503"
	// OutageOverloaded answers 529 with an "overloaded" error, as some
	// providers do when they shed load.
	OutageOverloaded OutageMode = "529"
	// OutageDrop drops the connection without a response (a reset).
	OutageDrop OutageMode = "drop"
	// OutageHang holds the request without an answer until the client
	// gives up or the server closes.
	OutageHang OutageMode = "hang"
)

// OutageModes lists the modes, for messages.
var OutageModes = []OutageMode{OutageUnavailable, OutageOverloaded, OutageDrop, OutageHang}

// Outage is a fake's outage switch: while it is on, every request fails
// in its mode. Tests turn it on for a set time (Start) or until they turn
// it off (End), in process or over HTTP (ServeHTTP). The zero value is
// off; it is safe for concurrent use.
type Outage struct {
	mu    sync.Mutex
	mode  OutageMode
	began time.Time
	until time.Time // zero: until End
}

// OutageState is the switch as ServeHTTP writes it.
type OutageState struct {
	Active bool       `json:"active"`
	Mode   OutageMode `json:"mode,omitempty"`
	Began  *time.Time `json:"began,omitempty"`
	Until  *time.Time `json:"until,omitempty"`
}

// Start turns an outage in mode on at now for d (0 or less: until End).
func (o *Outage) Start(mode OutageMode, now time.Time, d time.Duration) error {
	if !validMode(mode) {
		return fmt.Errorf("unknown outage mode %q: want one of %v", mode, OutageModes)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.mode, o.began, o.until = mode, now, time.Time{}
	if d > 0 {
		o.until = now.Add(d)
	}
	return nil
}

// End turns the outage off.
func (o *Outage) End() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.mode = ""
}

// Active is the outage's mode at now, and whether one is on.
func (o *Outage) Active(now time.Time) (OutageMode, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mode == "" || (!o.until.IsZero() && !now.Before(o.until)) {
		return "", false
	}
	return o.mode, true
}

// State is the switch at now.
func (o *Outage) State(now time.Time) OutageState {
	mode, on := o.Active(now)
	if !on {
		return OutageState{}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	st := OutageState{Active: true, Mode: mode}
	began := o.began
	st.Began = &began
	if !o.until.IsZero() {
		until := o.until
		st.Until = &until
	}
	return st
}

func validMode(m OutageMode) bool {
	for _, v := range OutageModes {
		if m == v {
			return true
		}
	}
	return false
}

// OutagePath is where a fake serves its outage switch (ServeHTTP).
const OutagePath = "/fake/outage"

// outageRequest is the body of a POST to OutagePath.
type outageRequest struct {
	Mode    OutageMode `json:"mode"`
	Seconds float64    `json:"seconds"`
}

// ServeHTTP is the switch's control endpoint: GET reads it, POST
// {"mode": "503"|"529"|"drop"|"hang", "seconds": N} turns it on for N
// seconds (0: until DELETE), DELETE turns it off. Each answers the state.
func (o *Outage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	switch r.Method {
	case http.MethodGet:
	case http.MethodDelete:
		o.End()
	case http.MethodPost:
		var req outageRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
			http.Error(w, fmt.Sprintf("the body must be {\"mode\": one of %v, \"seconds\": N}: %s", OutageModes, err),
				http.StatusBadRequest)
			return
		}
		if req.Seconds < 0 {
			http.Error(w, "seconds must be 0 (until DELETE) or more", http.StatusBadRequest)
			return
		}
		if err := o.Start(req.Mode, now, time.Duration(req.Seconds*float64(time.Second))); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed: GET, POST or DELETE", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(o.State(now))
}

// Drop closes a request's connection without a response, with a reset
// (SO_LINGER 0), as a provider's load balancer that drops it does.
func Drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// Hold holds a request until its client goes away, the server closes or
// limit passes (0: no limit).
func (s *Server) Hold(r *http.Request, limit time.Duration) {
	var expired <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-r.Context().Done():
	case <-s.done:
	case <-expired:
	}
}
