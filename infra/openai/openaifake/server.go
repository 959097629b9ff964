package openaifake

import (
	"crypto/subtle"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gbresearch/gb/infra/fakeprovider"
)

// Server is a running fake chat-completions API on 127.0.0.1. It is safe
// for concurrent use.
type Server struct {
	cfg Config
	srv *fakeprovider.Server // its Close ends waits and hangs

	limits *limiter
	cache  *promptCache
	rec    recorder
	faults faultQueue
	outage fakeprovider.Outage
	seed   maphash.Seed // of the prompt-prefix hashes
	seq    atomic.Int64 // of completion ids
	calls  atomic.Int64 // of tool call ids
}

// New starts a server enforcing cfg. Close it when done.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:    cfg,
		limits: newLimiter(cfg.RPM, cfg.TPM, cfg.Organization, cfg.Now()),
		cache:  newPromptCache(cfg.CacheTTL),
		seed:   maphash.MakeSeed(),
	}
	s.srv = fakeprovider.Start(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL of the API, ending in /v1, as OPENAI_BASE_URL takes it.
func (s *Server) URL() string { return s.srv.URL() + "/v1" }

// Close ends the requests held (latency, Timeout) and stops the server.
func (s *Server) Close() { s.srv.Close() }

// maxBody bounds a request body.
const maxBody = 64 << 20

// serve handles one request: the checks, the limits, then the answer.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.rec.Enter()
	defer s.rec.Leave()
	now := s.cfg.Now()
	if r.URL.Path == fakeprovider.OutagePath {
		s.outage.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.refuse(w, now, "", nil, errInvalidURL(r))
		return
	}
	if err := s.authorize(r); err != nil {
		s.refuse(w, now, "", nil, err)
		return
	}
	if s.failOutage(w, r, now) {
		return
	}
	adm, err := s.admit(w, r, now)
	if err != nil {
		s.refuse(w, now, adm.model(), adm.headers, err)
		return
	}
	s.answer(w, r, adm, now)
}

// authorize checks the Bearer key.
func (s *Server) authorize(r *http.Request) *apiError {
	auth := r.Header.Get("Authorization")
	scheme, key, _ := strings.Cut(auth, " ")
	key = strings.TrimSpace(key)
	if !strings.EqualFold(scheme, "Bearer") || key == "" {
		return errNoKey()
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.cfg.APIKey)) != 1 {
		return errBadKey(key)
	}
	return nil
}

// admission is a request let through the checks and the limits.
type admission struct {
	req     *Request
	spec    ModelSpec
	blocks  []uint64    // hashes of the prompt's prefix blocks
	cost    int         // tokens taken from the TPM limit
	headers http.Header // rate-limit headers
}

func (a *admission) model() string {
	if a.req == nil {
		return ""
	}
	return a.req.Model
}

// admit decodes and checks the request, counts its tokens, and takes it
// from the rate limits, in the order the API does.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, now time.Time) (*admission, *apiError) {
	adm := &admission{headers: s.limits.snapshot(now)}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return adm, badRequest("", "", "Could not read the request body: %s", err)
	}
	req, aerr := decodeRequest(body)
	if aerr != nil {
		return adm, aerr
	}
	req.ClientRequestID = r.Header.Get(ClientRequestIDHeader)
	adm.req = req
	spec, ok := s.cfg.Models[req.Model]
	if !ok {
		return adm, errModelNotFound(req.Model)
	}
	adm.spec = spec
	if aerr := validate(req, spec); aerr != nil {
		return adm, aerr
	}
	req.PromptTokens, adm.blocks = promptBlocks(req, s.seed)
	if w := spec.ContextWindow; w > 0 && req.PromptTokens+req.CompletionCap > w {
		return adm, errContextLength(w, req.PromptTokens, req.CompletionCap)
	}
	adm.cost = req.PromptTokens + req.CompletionCap
	adm.headers, aerr = s.limits.admit(req.Model, adm.cost, now)
	if aerr != nil {
		return adm, aerr
	}
	s.rec.Accept(adm.cost, now)
	return adm, nil
}

// answer decides the answer to an admitted request, bills it, waits the
// latency and writes it; or misbehaves with a fault that is not an answer.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, adm *admission, now time.Time) {
	req := adm.req
	fault := s.faults.next()
	var ans Answer
	if fault.Billed() { // an injected fault that is not an answer needs no brain
		ans = s.cfg.Brain(req)
		if fault == NoFault {
			fault = ans.Fault
		}
	}
	switch fault {
	case ServerError:
		s.refuse(w, now, req.Model, adm.headers, errServer())
		return
	case Overloaded:
		s.refuse(w, now, req.Model, adm.headers, errOverloaded())
		return
	case Timeout:
		s.hang(r, now, req.Model)
		return
	case Garbage:
		s.writeGarbage(w, adm.headers, now, req.Model)
		return
	}
	c := s.shape(req, adm.spec, ans)
	s.applyFault(&c, fault, req)
	cached := s.cache.use(req.Model, req.PromptTokens, adm.blocks, now)
	body := s.encode(req, c, cached, now)
	s.bill(req, adm, c, cached, fault, now)
	if !s.srv.Sleep(r.Context(), s.cfg.latency(req, c.tokens)) {
		panic(http.ErrAbortHandler) // billed all the same, as the API does; no answer
	}
	copyHeader(w.Header(), adm.headers)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// bill records an answered call and its cost.
func (s *Server) bill(req *Request, adm *admission, c completion, cached int, fault Fault, now time.Time) {
	call := Call{Time: now, Model: req.Model, PromptTokens: req.PromptTokens, CachedTokens: cached,
		CompletionTokens: c.tokens, ReasoningTokens: c.reasoning, MaxCompletionTokens: req.CompletionCap,
		TPMCost: adm.cost, FinishReason: c.finish, Fault: fault, ClientRequestID: req.ClientRequestID}
	call.CostUSD = s.cfg.Prices[req.Model].Cost(call.Usage())
	s.rec.Bill(call)
	s.rec.event(Event{Time: now, Status: http.StatusOK, Kind: KindOK, Model: req.Model, Fault: fault})
}

// refuse writes an error response and records it.
func (s *Server) refuse(w http.ResponseWriter, now time.Time, model string, limits http.Header, e *apiError) {
	s.rec.event(Event{Time: now, Status: e.status, Kind: e.kind, Model: model})
	copyHeader(w.Header(), limits)
	if e.retryAfter > 0 {
		retryHeaders(w.Header(), e.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(e.body())
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

// nextCallID is a new tool call id.
func (s *Server) nextCallID() string { return fmt.Sprintf("call_fake%08d", s.calls.Add(1)) }
