package conversefake

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gbresearch/gb/infra/fakeprovider"
)

// Server is a running fake Bedrock Runtime on 127.0.0.1. It is safe for
// concurrent use.
type Server struct {
	cfg    Config
	srv    *fakeprovider.Server
	quotas *quotas
	cache  *promptCache
	rec    recorder
	ids    atomic.Int64 // of toolUse ids
}

// New starts a server enforcing cfg. Close it when done.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, quotas: newQuotas(cfg.RPM, cfg.TPM, cfg.Now()),
		cache: &promptCache{ttl: cfg.CacheTTL, expires: map[cacheKey]time.Time{}}}
	s.srv = fakeprovider.Start(http.HandlerFunc(s.serve))
	return s
}

// URL is the endpoint, as the SDK's BaseEndpoint takes it.
func (s *Server) URL() string { return s.srv.URL() }

// Config is the configuration the server enforces, defaults filled in
// (its credentials and Region, for a client).
func (s *Server) Config() Config { return s.cfg }

// Close ends the answers held (Latency) and stops the server.
func (s *Server) Close() { s.srv.Close() }

const maxBody = 64 << 20

// serve handles one request: the path, the signature, the checks, the
// quotas, then the answer.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.rec.Enter()
	defer s.rec.Leave()
	now := s.cfg.Now()
	model, ok := modelOf(r)
	if !ok {
		s.rec.count(func(st *Stats) *int { return &st.NotFound })
		errorf(http.StatusNotFound, "UnknownOperationException", "The requested operation is not recognized by this fake server.").write(w)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.rec.count(func(st *Stats) *int { return &st.BadRequests })
		invalid("Could not read the request body.").write(w)
		return
	}
	if e := s.authenticate(r, body); e != nil {
		s.rec.count(func(st *Stats) *int { return &st.Unauthorized })
		e.write(w)
		return
	}
	spec, ok := s.cfg.Models[model]
	if !ok {
		s.rec.count(func(st *Stats) *int { return &st.NotFound })
		errorf(http.StatusNotFound, TypeNotFound, "Could not resolve the foundation model from the provided model identifier.").write(w)
		return
	}
	req, e := decode(body)
	if e == nil {
		e = req.check(spec)
	}
	if e != nil {
		s.rec.count(func(st *Stats) *int { return &st.BadRequests })
		e.write(w)
		return
	}
	s.converse(w, r, model, spec, req, now)
}

// modelOf is the model id of a POST /model/{modelId}/converse.
func modelOf(r *http.Request) (string, bool) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/model/")
	if !ok || r.Method != http.MethodPost {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/converse")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	model, err := url.PathUnescape(id)
	return model, err == nil
}

// nextCallID is a new toolUse id.
func (s *Server) nextCallID() string { return fmt.Sprintf("tooluse_fake%08d", s.ids.Add(1)) }
