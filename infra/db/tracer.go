package db

import (
	"context"
	"strings"
	"sync"
	"unicode"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// attrQuerySummary is the semantic conventions' low-cardinality summary of
// a statement ("SELECT gb_agent_research_runs"), also the span's name.
const attrQuerySummary = "db.query.summary"

// queryTracer gives each query and batch a client span (otelpgx: the
// database semantic conventions, db.system.name=postgresql,
// db.operation.name, the parameterized statement, server.address and
// server.port, never the arguments), named by the statement's summary.
//
// A statement is traced only when the context it runs in holds a
// recording span, with that span's own tracer provider: a process whose
// telemetry is off has no recording span and pays one context look-up per
// statement; River's polling, which runs in no span, makes none.
type queryTracer struct {
	mu     sync.Mutex
	byProv map[trace.TracerProvider]*otelpgx.Tracer
}

// tracedKey marks a context whose statement or batch otelpgx traces, so
// that only those are ended by it.
type tracedKey struct{}

var (
	_ pgx.QueryTracer = (*queryTracer)(nil)
	_ pgx.BatchTracer = (*queryTracer)(nil)
)

// forSpan is the otelpgx tracer of the provider of the recording span in
// ctx; nil when ctx holds none.
func (q *queryTracer) forSpan(ctx context.Context) *otelpgx.Tracer {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return nil
	}
	tp := span.TracerProvider()
	q.mu.Lock()
	defer q.mu.Unlock()
	t, ok := q.byProv[tp]
	if !ok {
		if q.byProv == nil {
			q.byProv = map[trace.TracerProvider]*otelpgx.Tracer{}
		}
		t = otelpgx.NewTracer(otelpgx.WithTracerProvider(tp), otelpgx.WithMeterProvider(noopmetric.NewMeterProvider()),
			otelpgx.WithDisableAcquireTracer())
		q.byProv[tp] = t
	}
	return t
}

// TraceQueryStart begins the span of a query.
func (q *queryTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	t := q.forSpan(ctx)
	if t == nil {
		return ctx
	}
	ctx = t.TraceQueryStart(context.WithValue(ctx, tracedKey{}, t), conn, data)
	summary := querySummary(data.SQL)
	span := trace.SpanFromContext(ctx)
	span.SetName(summary)
	span.SetAttributes(attribute.String(attrQuerySummary, summary))
	return ctx
}

// TraceQueryEnd ends the span of a query.
func (q *queryTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	if t, ok := ctx.Value(tracedKey{}).(*otelpgx.Tracer); ok {
		t.TraceQueryEnd(ctx, conn, data)
	}
}

// TraceBatchStart begins the span of a batch; each of its statements gets
// a span of its own, a child of it.
func (q *queryTracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	t := q.forSpan(ctx)
	if t == nil {
		return ctx
	}
	ctx = t.TraceBatchStart(context.WithValue(ctx, tracedKey{}, t), conn, data)
	trace.SpanFromContext(ctx).SetName("batch")
	return ctx
}

// TraceBatchQuery records one statement of a batch.
func (q *queryTracer) TraceBatchQuery(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	if t, ok := ctx.Value(tracedKey{}).(*otelpgx.Tracer); ok {
		t.TraceBatchQuery(ctx, conn, data)
	}
}

// TraceBatchEnd ends the span of a batch.
func (q *queryTracer) TraceBatchEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchEndData) {
	if t, ok := ctx.Value(tracedKey{}).(*otelpgx.Tracer); ok {
		t.TraceBatchEnd(ctx, conn, data)
	}
}

// querySummary is a statement's operation and the first table it names
// ("SELECT gb_agent_research_runs", "INSERT river_job", "COMMIT"): what
// the conventions call db.query.summary, with none of the statement's
// values.
func querySummary(sql string) string {
	words := strings.FieldsFunc(stripComments(sql), func(r rune) bool {
		return unicode.IsSpace(r) || r == '(' || r == ')' || r == ',' || r == ';'
	})
	if len(words) == 0 {
		return "UNKNOWN"
	}
	op := strings.ToUpper(words[0])
	// A CTE (WITH) and the rest are summarized by their operation alone.
	key, ok := map[string]string{"SELECT": "FROM", "DELETE": "FROM", "INSERT": "INTO", "UPDATE": ""}[op]
	if !ok {
		return op
	}
	for i := 1; i < len(words); i++ {
		if key == "" || strings.EqualFold(words[i-1], key) {
			if table := tableName(words[i]); table != "" {
				return op + " " + table
			}
			if key == "" {
				break
			}
		}
	}
	return op
}

// tableName is word when it names a table (an identifier, perhaps
// schema-qualified or quoted); "" otherwise.
func tableName(word string) string {
	w := strings.Trim(word, `"`)
	if w == "" || strings.EqualFold(w, "ONLY") || strings.EqualFold(w, "SELECT") {
		return ""
	}
	for _, r := range w {
		if !(r == '_' || r == '.' || r == '"' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return ""
		}
	}
	if unicode.IsDigit(rune(w[0])) {
		return ""
	}
	return w
}

// stripComments drops a statement's leading "--" and "/* */" comments.
func stripComments(sql string) string {
	for {
		sql = strings.TrimLeftFunc(sql, unicode.IsSpace)
		switch {
		case strings.HasPrefix(sql, "--"):
			_, rest, ok := strings.Cut(sql, "\n")
			if !ok {
				return ""
			}
			sql = rest
		case strings.HasPrefix(sql, "/*"):
			_, rest, ok := strings.Cut(sql[2:], "*/")
			if !ok {
				return ""
			}
			sql = rest
		default:
			return sql
		}
	}
}
