package openaifake

import (
	"net/http"
	"time"

	"github.com/gbresearch/gb/infra/fakeprovider"
)

// Kinds of Event of the requests an outage failed (Server.StartOutage).
const (
	KindOutageUnavailable = "outage_unavailable" // 503
	KindOutageOverloaded  = "outage_overloaded"  // 529
	KindOutageDropped     = "outage_dropped"     // connection reset, no response
	KindOutageHang        = "outage_hang"        // held until the client left
)

// StartOutage makes every request fail in mode for d (0 or less: until
// EndOutage), before its checks and rate limits, unbilled: 503s, 529
// "overloaded", dropped connections or hangs. The same switch is served
// over HTTP at fakeprovider.OutagePath (under the server's root, not /v1).
func (s *Server) StartOutage(mode fakeprovider.OutageMode, d time.Duration) error {
	return s.outage.Start(mode, s.cfg.Now(), d)
}

// EndOutage turns the outage off.
func (s *Server) EndOutage() { s.outage.End() }

// Outage is the outage switch as it stands.
func (s *Server) Outage() fakeprovider.OutageState { return s.outage.State(s.cfg.Now()) }

// ControlURL is the address of the server's outage switch.
func (s *Server) ControlURL() string { return s.srv.URL() + fakeprovider.OutagePath }

// failOutage fails a request as the outage on at now does, and reports
// whether one was on.
func (s *Server) failOutage(w http.ResponseWriter, r *http.Request, now time.Time) bool {
	mode, on := s.outage.Active(now)
	if !on {
		return false
	}
	switch mode {
	case fakeprovider.OutageUnavailable:
		s.refuse(w, now, "", nil, errUnavailable())
	case fakeprovider.OutageOverloaded:
		s.refuse(w, now, "", nil, errOverloaded529())
	case fakeprovider.OutageDrop:
		s.rec.event(Event{Time: now, Kind: KindOutageDropped})
		fakeprovider.Drop(w)
	case fakeprovider.OutageHang:
		s.rec.event(Event{Time: now, Kind: KindOutageHang})
		s.srv.Hold(r, s.cfg.HangFor)
		panic(http.ErrAbortHandler) // no response at all
	}
	return true
}

func errUnavailable() *apiError {
	return &apiError{status: http.StatusServiceUnavailable, kind: KindOutageUnavailable, typ: "server_error",
		message: "Service Unavailable: the server is not ready to handle the request. Please retry."}
}

// statusOverloaded is the status some providers answer when they shed
// load (Anthropic's overloaded_error).
const statusOverloaded = 529

func errOverloaded529() *apiError {
	return &apiError{status: statusOverloaded, kind: KindOutageOverloaded, typ: "overloaded_error", message: "Overloaded"}
}
