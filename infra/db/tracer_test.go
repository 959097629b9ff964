package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gbresearch/gb/infra/dbtest"
)

// TestPoolTracesStatementsUnderASpan: a statement run in a recording span
// is a client span of it, named by the statement's summary, with the
// database conventions' attributes and none of the statement's arguments;
// a batch is a span holding one per statement; a transaction's COMMIT is
// a span of the context it commits in; a statement run in no span makes
// none.
func TestPoolTracesStatementsUnderASpan(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx := context.Background()
	const secret = "a user's private question"

	// No span, no database span.
	if _, err := pool.Exec(ctx, `SELECT length($1)`, secret); err != nil {
		t.Fatal(err)
	}
	sctx, parent := tp.Tracer("t").Start(ctx, "step")
	var n int
	if err := pool.QueryRow(sctx, `SELECT count(*) FROM gb_agent_research_runs WHERE topic = $1`, secret).Scan(&n); err != nil {
		t.Fatal(err)
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT length($1)`, secret)
	b.Queue(`UPDATE gb_users SET id = id WHERE false AND id::text = $1`, secret)
	if err := pool.SendBatch(sctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(sctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(sctx, `INSERT INTO gb_users (name) SELECT $1 WHERE false`, secret)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	parent.End()

	byName := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), secret) {
				t.Errorf("span %q holds an argument in %s", s.Name, kv.Key)
			}
		}
		byName[s.Name] = s
	}
	want := map[string]string{"SELECT gb_agent_research_runs": "step", "batch": "step", "SELECT": "batch",
		"UPDATE": "batch", "BEGIN": "step", "INSERT gb_users": "step", "COMMIT": "step"}
	if len(byName) != len(want)+1 {
		t.Errorf("spans %v; want the step's and %v", keys(byName), want)
	}
	for name, parentName := range want {
		s, ok := byName[name]
		if !ok {
			t.Errorf("no span %q; spans %v", name, keys(byName))
			continue
		}
		if p := byName[parentName]; s.Parent.SpanID() != p.SpanContext.SpanID() {
			t.Errorf("span %q is not a child of %q", name, parentName)
		}
		if s.SpanKind != trace.SpanKindClient && name != "step" {
			t.Errorf("span %q is of kind %s", name, s.SpanKind)
		}
	}
	attrs := map[string]string{}
	for _, kv := range byName["SELECT gb_agent_research_runs"].Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range map[string]string{"db.system.name": "postgresql", "db.operation.name": "SELECT",
		"db.query.summary": "SELECT gb_agent_research_runs", "server.address": "127.0.0.1"} {
		if attrs[k] != v {
			t.Errorf("attribute %s = %q, want %q (all %v)", k, attrs[k], v, attrs)
		}
	}
	if attrs["server.port"] == "" || attrs["server.port"] == "0" {
		t.Errorf("no server.port: %v", attrs)
	}
}

func keys(m map[string]tracetest.SpanStub) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
