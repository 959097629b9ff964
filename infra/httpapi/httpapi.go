// Package httpapi is the REST API of research runs, an http.Handler served
// by the API Lambda (through API Gateway) and by `gb dev` on localhost.
//
// Every answer that is not a success has a JSON body
// {"error":{"code","field","message"}}, including the router's own 404s,
// 405s and redirects. While the database is unreachable the API answers 503
// with a Retry-After header.
//
// It may import jobs and its subpackages, infra/dashboard (the web
// dashboard it serves under /ui/), and infra/db (the schema's version,
// for GET /readyz); it knows nothing of Lambda.
package httpapi

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/gbresearch/gb/infra/dashboard"
	"github.com/gbresearch/gb/jobs"
)

// MaxBodyBytes caps a request body.
const MaxBodyBytes = 64 << 10

// DefaultDBTimeout is how long the database work of one request may take
// when Deps.DBTimeout is 0.
const DefaultDBTimeout = 10 * time.Second

// Route is one method and path pattern the API serves.
type Route struct {
	Method string
	Path   string
}

// Routes lists the research routes of the API, in the path syntax of API
// Gateway ({id} parameters), so deployment descriptors can be checked
// against it. KeyRoutes, WebhookRoutes and PublicRoutes are the API's
// other routes.
var Routes = []Route{
	{"POST", "/v1/gb/research"},
	{"GET", "/v1/gb/research"},
	{"GET", "/v1/gb/research/{id}"},
	{"DELETE", "/v1/gb/research/{id}"},
	{"POST", "/v1/gb/research/{id}/cancel"},
	{"GET", "/v1/gb/research/{id}/tree"},
	{"GET", "/v1/gb/research/{id}/events"},
	{"GET", "/v1/gb/research/{id}/events/stream"},
	{"GET", "/v1/gb/research/{id}/messages"},
	{"POST", "/v1/gb/research/{id}/messages"},
	{"GET", "/v1/gb/research/{id}/sources"},
	{"GET", "/v1/gb/research/{id}/steps"},
	{"GET", "/v1/gb/research/{id}/citations"},
	{"GET", "/v1/gb/research/{id}/notes"},
	{"POST", "/v1/gb/research/{id}/answer"},
	{"POST", "/v1/gb/research/{id}/plan"},
	{"POST", "/v1/gb/research/{id}/fork"},
}

// PublicRoutes are the routes served without an API key: the OpenAPI
// description of the routes, the liveness check and the readiness check. They are kept apart from Routes until the
// deployment template routes them too.
var PublicRoutes = []Route{
	{"GET", "/v1/gb/openapi.json"},
	{"GET", "/healthz"},
	{"GET", "/readyz"},
}

// Deps are what the API is built from.
type Deps struct {
	// Service starts, reads and ends the runs. Required.
	Service *jobs.Service
	// Logger gets a line per failed request; nil means slog.Default().
	Logger *slog.Logger
	// Kick, when set, is called after a research is inserted, to wake a
	// worker; its failure is logged, never returned.
	Kick func(ctx context.Context) error
	// DBTimeout bounds the work of one request, database included, so that
	// an unreachable database answers 503 instead of hanging; 0 means
	// DefaultDBTimeout.
	DBTimeout time.Duration
	// Notifier wakes a long poll on a tree's events as soon as one lands
	// (the process's *messenger.Listener); nil means the poll re-reads on
	// its fallback timer only.
	Notifier jobs.Notifier
	// EventFallback is how often a long poll re-reads the events whatever
	// the notifier says; 0 means jobs.EventFallbackDefault.
	EventFallback time.Duration
	// StreamHeartbeat is how long an event stream stays silent before a
	// heartbeat; 0 means DefaultStreamHeartbeat.
	StreamHeartbeat time.Duration
	// StreamMaxDuration is how long one event stream stays open before it
	// closes for its client to reconnect; 0 means DefaultStreamMaxDuration.
	StreamMaxDuration time.Duration
	// MaxStreamsPerUser bounds the event streams a user has open at once;
	// 0 means DefaultMaxStreamsPerUser.
	MaxStreamsPerUser int
	// NoStream, when set, is why this deployment cannot stream (a gateway
	// that buffers answers): the stream route answers 501 with it, and
	// clients follow with the long poll.
	NoStream string
	// Tracer, when set, serves each request in a span that continues the
	// request's W3C traceparent (tracing.go); nil traces nothing.
	Tracer trace.TracerProvider
	// Meter, when set with Tracer, records http.server.request.duration
	// by route; nil records no metric.
	Meter metric.MeterProvider
}

type api struct {
	Deps
}

// New returns the API handler.
func New(d Deps) http.Handler {
	a := &api{Deps: d}
	a.Logger = cmp.Or(d.Logger, slog.Default()).With("component", "api")
	a.DBTimeout = cmp.Or(d.DBTimeout, DefaultDBTimeout)
	a.StreamHeartbeat = cmp.Or(d.StreamHeartbeat, DefaultStreamHeartbeat)
	a.StreamMaxDuration = cmp.Or(d.StreamMaxDuration, DefaultStreamMaxDuration)
	a.MaxStreamsPerUser = cmp.Or(d.MaxStreamsPerUser, DefaultMaxStreamsPerUser)
	handlers := map[Route]http.HandlerFunc{
		{"POST", "/v1/gb/research"}:                   a.create,
		{"GET", "/v1/gb/research"}:                    a.list,
		{"GET", "/v1/gb/research/{id}"}:               a.get,
		{"DELETE", "/v1/gb/research/{id}"}:            a.delete,
		{"POST", "/v1/gb/research/{id}/cancel"}:       a.cancel,
		{"GET", "/v1/gb/research/{id}/tree"}:          a.tree,
		{"GET", "/v1/gb/research/{id}/events"}:        a.events,
		{"GET", "/v1/gb/research/{id}/events/stream"}: a.eventStream,
		{"GET", "/v1/gb/research/{id}/messages"}:      a.messages,
		{"GET", "/v1/gb/research/{id}/notes"}:         a.notes,
		{"POST", "/v1/gb/research/{id}/messages"}:     a.sendMessage,
		{"GET", "/v1/gb/research/{id}/sources"}:       a.sources,
		{"GET", "/v1/gb/research/{id}/steps"}:         a.steps,
		{"GET", "/v1/gb/research/{id}/citations"}:     a.citations,
		{"POST", "/v1/gb/research/{id}/answer"}:       a.answer,
		{"POST", "/v1/gb/research/{id}/plan"}:         a.decidePlan,
		{"POST", "/v1/gb/research/{id}/fork"}:         a.fork,
		{"GET", "/v1/gb/keys"}:                        a.listKeys,
		{"POST", "/v1/gb/keys"}:                       a.createKey,
		{"DELETE", "/v1/gb/keys/{id}"}:                a.revokeKey,
	}
	maps.Copy(handlers, a.webhookHandlers())
	public := map[Route]http.HandlerFunc{
		{"GET", "/v1/gb/openapi.json"}: serveOpenAPI,
		{"GET", "/healthz"}:            health,
		{"GET", "/readyz"}:             a.ready,
	}
	mux := http.NewServeMux()
	for _, r := range slices.Concat(Routes, KeyRoutes, WebhookRoutes) {
		mux.Handle(r.Method+" "+r.Path, a.auth(handlers[r]))
	}
	for _, r := range PublicRoutes {
		mux.Handle(r.Method+" "+r.Path, public[r])
	}
	// The web dashboard (infra/dashboard): static pages, served without a
	// key, that call the routes above with the key the user signs in with.
	for _, p := range dashboard.Patterns {
		mux.Handle("GET "+p, dashboard.Handler())
	}
	// No catch-all pattern: it would turn the mux's 405s into 404s. The
	// mux's own 404, 405 and redirect answers get JSON bodies from
	// jsonErrors instead.
	return traced(d.Tracer, d.Meter, mux, jsonErrors(limitHeaders(withTimeout(a.DBTimeout, a.StreamMaxDuration, mux))))
}

type userKey struct{}

// auth resolves the bearer key to a user, or answers 401, saying when the
// key is known but was revoked or has expired.
func (a *api) auth(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := bearerKey(r.Header.Get("Authorization"))
		if !ok {
			writeError(w, http.StatusUnauthorized, "unauthorized", "", "missing Authorization: Bearer <key> header")
			return
		}
		uid, err := jobs.Authenticate(r.Context(), a.Service.Pool(), key)
		if errors.Is(err, jobs.ErrBadKey) {
			writeError(w, http.StatusUnauthorized, "unauthorized", "", keyRefusal(err))
			return
		}
		if err != nil {
			a.internal(w, r, err)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), userKey{}, uid)))
	})
}

// bearerKey returns the credentials of an Authorization header of the
// Bearer scheme, which is matched case-insensitively (RFC 7235 §2.1).
func bearerKey(h string) (string, bool) {
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimLeft(key, " ")
	return key, key != ""
}

func userID(r *http.Request) int64 { return r.Context().Value(userKey{}).(int64) }

// pathID parses the {id} path parameter; an id that does not parse is a
// run that does not exist.
func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusNotFound, "not_found", "", "no research with id "+strconv.Quote(r.PathValue("id")))
		return 0, false
	}
	return id, true
}

// fail maps domain errors to answers; anything else is a 503 when the
// database is unreachable, or a 500 that is logged and not shown.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	var fe *jobs.FieldError
	switch {
	case errors.As(err, &fe):
		writeError(w, http.StatusBadRequest, "invalid_request", fe.Field, fe.Error())
	case errors.Is(err, jobs.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "", "no research with that id")
	case errors.Is(err, jobs.ErrTreeWorking):
		writeError(w, http.StatusConflict, "tree_working", "", err.Error())
	case errors.Is(err, jobs.ErrNotWorking), errors.Is(err, jobs.ErrRootHasNoInbox):
		writeError(w, http.StatusConflict, "no_inbox", "", err.Error())
	case errors.Is(err, jobs.ErrNotAsking):
		writeError(w, http.StatusConflict, "not_asking", "", err.Error())
	case errors.Is(err, jobs.ErrNotProposing):
		writeError(w, http.StatusConflict, "not_proposing", "", err.Error())
	case errors.Is(err, jobs.ErrTooManyWorking):
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterTooManySeconds))
		writeError(w, http.StatusTooManyRequests, "too_many_working", "", err.Error())
	default:
		a.internal(w, r, err)
	}
}

// internal answers an error that is not the caller's: 503 with Retry-After
// when the database is unreachable or too slow, else a logged 500.
func (a *api) internal(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case r.Context().Err() != nil && errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer, and it is no
		// failure of the server's.
		a.Logger.InfoContext(r.Context(), "request cancelled", "method", r.Method, "path", r.URL.Path)
		w.WriteHeader(StatusClientClosed)
	case dbUnavailable(err):
		a.Logger.WarnContext(r.Context(), "database unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		unavailable(w)
	default:
		a.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "", "internal error; it has been logged")
	}
}
