package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/infra/telemetry"
	"github.com/gbresearch/gb/jobs"
)

// otlpSpan is a span an OTLP receiver got, with the service that sent it.
type otlpSpan struct {
	service string
	span    *tracepb.Span
}

func (s otlpSpan) traceID() string  { return hex.EncodeToString(s.span.TraceId) }
func (s otlpSpan) id() string       { return hex.EncodeToString(s.span.SpanId) }
func (s otlpSpan) parentID() string { return hex.EncodeToString(s.span.ParentSpanId) }

// attr is the value of a span's attribute as text ("" when absent).
func (s otlpSpan) attr(key string) string {
	for _, kv := range s.span.Attributes {
		if kv.Key == key {
			return anyText(kv.Value)
		}
	}
	return ""
}

func anyText(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.Values {
			parts = append(parts, anyText(e))
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// otlpReceiver is an OTLP/HTTP receiver of traces and metrics in the
// test: it decodes each export request's protobuf and keeps its spans and
// the names of its metrics, by service.
type otlpReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []otlpSpan
	metrics map[string][]string // service → metric names
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{metrics: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var msg colltrace.ExportTraceServiceRequest
		if !decodeOTLP(w, req, &msg) {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rs := range msg.ResourceSpans {
			service := serviceOf(rs.Resource.GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					r.spans = append(r.spans, otlpSpan{service: service, span: sp})
				}
			}
		}
		writeOTLP(w, &colltrace.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var msg collmetrics.ExportMetricsServiceRequest
		if !decodeOTLP(w, req, &msg) {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rm := range msg.ResourceMetrics {
			service := serviceOf(rm.Resource.GetAttributes())
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					r.metrics[service] = append(r.metrics[service], m.Name)
				}
			}
		}
		writeOTLP(w, &collmetrics.ExportMetricsServiceResponse{})
	})
	r.Server = httptest.NewServer(mux)
	t.Cleanup(r.Close)
	return r
}

func decodeOTLP(w http.ResponseWriter, req *http.Request, msg proto.Message) bool {
	body, err := io.ReadAll(req.Body)
	if err == nil && req.Header.Get("Content-Type") != "application/x-protobuf" {
		err = fmt.Errorf("content type %q", req.Header.Get("Content-Type"))
	}
	if err == nil {
		err = proto.Unmarshal(body, msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeOTLP(w http.ResponseWriter, msg proto.Message) {
	b, _ := proto.Marshal(msg)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func serviceOf(attrs []*commonpb.KeyValue) string {
	for _, kv := range attrs {
		if kv.Key == "service.name" {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// spansOf is what the receiver got of a trace.
func (r *otlpReceiver) spansOf(traceID string) []otlpSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []otlpSpan
	for _, s := range r.spans {
		if s.traceID() == traceID {
			out = append(out, s)
		}
	}
	return out
}

// TestTraceAcrossProcesses starts a research over HTTP with a traceparent
// on an API traced in this process, and works it on a separate `gb worker`
// process configured by OTEL_* variables only. Both export to an OTLP
// receiver in the test, which gets one trace, the traceparent's, holding
// the API's span, the run of every agent of the tree (the root, linked
// to the API's span, and the sub-agents it spawned, each under its parent's
// run and linked to the spawn_subagent call that made it), their step jobs
// in River's spans (linked to the span that enqueued them), steps,
// model calls and tool calls with their GenAI attributes; and no span of
// the tree outside it. The worker also exports the agent's metrics.
func TestTraceAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	recv := newOTLPReceiver(t)
	url, pool, seed := lambdatest.SeededDB(t)
	loadTopicDocs(t, pool)

	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(recv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	apiTel := telemetry.New(exp, nil, "gb-api-test")
	// The API inserts only: the research is worked by the other process.
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}, Tracer: apiTel.Tracer})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(httpapi.New(httpapi.Deps{Service: agent, Tracer: apiTel.Tracer}))
	t.Cleanup(api.Close)

	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest(http.MethodPost, api.URL+"/v1/gb/research",
		strings.NewReader(fmt.Sprintf(`{"topic": %q}`, demoTopic)))
	req.Header.Set("Authorization", "Bearer "+seed.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/gb/research: %d %s", resp.StatusCode, body)
	}
	var created struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.ID == 0 {
		t.Fatalf("no run id in %s: %v", body, err)
	}
	root := created.ID

	worker := exec.Command(buildGB(t), "worker")
	var stderr syncBuffer
	worker.Env = append(os.Environ(), "DATABASE_URL="+url, "OPENAI_API_KEY=", "GB_LOG_LEVEL=warn",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_SERVICE_NAME=gb-worker-test", "OTEL_BSP_SCHEDULE_DELAY=100")
	worker.Stdout, worker.Stderr = io.Discard, &stderr
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- worker.Wait() }()
	t.Cleanup(func() { _ = worker.Process.Kill() })
	waitFor(t, 90*time.Second, "the research to end", func() bool {
		r, err := jobs.GetRun(ctx, pool, root)
		return err == nil && r.Ended()
	})
	tree, err := jobs.Tree(ctx, pool, root)
	if err != nil {
		t.Fatal(err)
	}
	if tree[0].Status != jobs.StatusSucceeded || len(tree) < 3 {
		t.Fatalf("want a succeeded root with sub-agents, got %d runs, root %s\n%s", len(tree), tree[0].Status, stderr.String())
	}
	// SIGTERM: gb worker stops and flushes its telemetry before it exits.
	_ = worker.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Fatalf("gb worker: %v\n%s", err, stderr.String())
	}
	if err := apiTel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	checkTreeTrace(t, recv, traceID, callerSpan, tree)
	recv.mu.Lock()
	metrics := recv.metrics["gb-worker-test"]
	recv.mu.Unlock()
	for _, name := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "gb.steps", "gb.queue.wait"} {
		if !slices.Contains(metrics, name) {
			t.Errorf("the worker exported no %s; it exported %v", name, metrics)
		}
	}
}

// checkTreeTrace checks the one trace of a tree.
func checkTreeTrace(t *testing.T, recv *otlpReceiver, traceID, callerSpan string, tree []*jobs.Run) {
	t.Helper()
	spans := recv.spansOf(traceID)
	byID := map[string]otlpSpan{}
	byName := map[string][]otlpSpan{}
	for _, s := range spans {
		byID[s.id()] = s
		kind := strings.Fields(s.span.Name)[0]
		byName[kind] = append(byName[kind], s)
	}
	parentOf := func(s otlpSpan) otlpSpan { return byID[s.parentID()] }

	// The API's span continues the caller's traceparent.
	apiSpans := byName["POST"]
	if len(apiSpans) != 1 || apiSpans[0].span.Name != "POST /v1/gb/research" || apiSpans[0].parentID() != callerSpan ||
		apiSpans[0].service != "gb-api-test" || apiSpans[0].attr("http.response.status_code") == "" {
		t.Fatalf("API spans %v, want one POST /v1/gb/research from gb-api-test, child of %s", names(apiSpans), callerSpan)
	}

	// One invoke_agent span per run of the tree: the root's is the root
	// of the trace, linked to the API's span; a sub-agent's hangs from its
	// parent's, linked to the spawn_subagent call that made it.
	runSpan := map[string]otlpSpan{}
	for _, s := range byName["invoke_agent"] {
		runSpan[s.attr("gb.run.id")] = s
	}
	linkOf := func(s otlpSpan) otlpSpan {
		if len(s.span.Links) != 1 {
			return otlpSpan{}
		}
		return byID[hex.EncodeToString(s.span.Links[0].SpanId)]
	}
	for _, run := range tree {
		s, ok := runSpan[fmt.Sprint(run.ID)]
		if !ok {
			t.Fatalf("run %d (%q) has no invoke_agent span in the trace; spans: %v", run.ID, run.Name, names(spans))
		}
		if s.attr("gen_ai.operation.name") != "invoke_agent" || s.attr("gen_ai.agent.id") != fmt.Sprint(run.ID) ||
			s.attr("gen_ai.request.model") != run.Model || s.service != "gb-worker-test" {
			t.Errorf("run %d's span %s from %s lacks its GenAI attributes", run.ID, s.span.Name, s.service)
		}
		p, l := parentOf(s), linkOf(s)
		switch {
		case run.IsRoot() && (s.parentID() != "" || l.id() != apiSpans[0].id()):
			t.Errorf("the root's span hangs from %q, linked to %q; want a root linked to the API's span", p.span.GetName(), l.span.GetName())
		case !run.IsRoot() && (p.attr("gb.run.id") != fmt.Sprint(*run.ParentID) || !strings.HasPrefix(p.span.GetName(), "invoke_agent") ||
			l.span.GetName() != "execute_tool spawn_subagent" || l.attr("gb.run.id") != fmt.Sprint(*run.ParentID)):
			t.Errorf("sub-agent %q's span hangs from %q of run %s, linked to %q; want its parent's run span, linked to its spawn_subagent call",
				run.Name, p.span.GetName(), p.attr("gb.run.id"), l.span.GetName())
		}
	}

	// Every step job is a child of its run's span, with its River id and
	// attempt, linked to the span that enqueued it; every step is a child
	// of a job; model and tool calls are children of steps.
	linked := 0
	jobSpans := byName["river.work/"+jobs.StepKind]
	for _, s := range jobSpans {
		if p := parentOf(s); p.span.GetName() == "" || !strings.HasPrefix(p.span.Name, "invoke_agent") ||
			p.attr("gb.run.id") != s.attr("gb.run.id") || s.attr("river.job.id") == "" || s.attr("river.job.attempt") == "" {
			t.Errorf("job span %s of run %s: parent %q, job %q attempt %q", s.span.Name, s.attr("gb.run.id"),
				p.span.GetName(), s.attr("river.job.id"), s.attr("river.job.attempt"))
		}
		if len(s.span.Links) == 1 && hex.EncodeToString(s.span.Links[0].TraceId) == traceID {
			linked++
		}
	}
	if len(jobSpans) < len(tree) || linked != len(jobSpans) {
		t.Errorf("%d job spans, %d linked to their enqueuer; want at least one per run (%d), all linked",
			len(jobSpans), linked, len(tree))
	}
	steps := map[string]int{}
	for _, s := range byName["step"] {
		if p := parentOf(s); p.span.GetName() != "river.work/"+jobs.StepKind {
			t.Errorf("step span of run %s hangs from %q", s.attr("gb.run.id"), p.span.GetName())
		}
		steps[s.attr("gb.run.id")]++
	}
	for _, run := range tree {
		if steps[fmt.Sprint(run.ID)] < run.Steps {
			t.Errorf("run %d made %d steps, the trace holds %d", run.ID, run.Steps, steps[fmt.Sprint(run.ID)])
		}
	}
	for _, s := range byName["chat"] {
		if parentOf(s).span.GetName() != "step" || s.attr("gen_ai.operation.name") != "chat" ||
			s.attr("gen_ai.provider.name") == "" || s.attr("gen_ai.request.model") != "offline" ||
			s.span.Name != "chat offline" || s.attr("gen_ai.response.model") != "offline" || s.attr("gen_ai.usage.input_tokens") == "" ||
			s.attr("gen_ai.usage.input_tokens") == "0" || s.attr("gen_ai.usage.output_tokens") == "" ||
			s.attr("gen_ai.usage.cache_read.input_tokens") == "" || s.span.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("chat span %s lacks its GenAI attributes: %v", s.span.Name, s.span.Attributes)
		}
	}
	tools := map[string]int{}
	for _, s := range byName["execute_tool"] {
		if parentOf(s).span.GetName() != "step" || s.attr("gen_ai.operation.name") != "execute_tool" ||
			s.span.Name != "execute_tool "+s.attr("gen_ai.tool.name") || s.attr("gen_ai.tool.call.id") == "" {
			t.Errorf("tool span %s lacks its GenAI attributes: %v", s.span.Name, s.span.Attributes)
		}
		tools[s.attr("gen_ai.tool.name")]++
	}
	total := 0
	for _, run := range tree {
		total += run.Steps
	}
	if len(byName["chat"]) < total || tools["spawn_subagent"] != len(tree)-1 || tools["search"] == 0 || tools["wait_subagents"] == 0 {
		t.Errorf("%d chat spans for %d steps; tool calls %v", len(byName["chat"]), total, tools)
	}
	// Every step's commit is a database span inside it, and every span lies
	// within its parent's time: a collector shows no skew.
	withDB := map[string]bool{}
	dbSpans := 0
	for _, s := range spans {
		p, ok := byID[s.parentID()]
		if s.attr("db.system.name") == "postgresql" {
			dbSpans++
			if ok && p.span.Name == "step" {
				withDB[p.id()] = true
			}
		}
		if ok && (s.span.StartTimeUnixNano < p.span.StartTimeUnixNano || s.span.EndTimeUnixNano > p.span.EndTimeUnixNano) {
			t.Errorf("span %s (%d..%d) is not within its parent %s (%d..%d)", s.span.Name, s.span.StartTimeUnixNano,
				s.span.EndTimeUnixNano, p.span.Name, p.span.StartTimeUnixNano, p.span.EndTimeUnixNano)
		}
	}
	if len(withDB) != len(byName["step"]) {
		t.Errorf("%d of %d step spans hold a database span (%d database spans in the trace)", len(withDB), len(byName["step"]), dbSpans)
	}
	t.Logf("trace %s: %d spans: %d API, %d runs, %d jobs, %d steps, %d model calls, %d database, tool calls %v", traceID, len(spans),
		len(apiSpans), len(byName["invoke_agent"]), len(jobSpans), len(byName["step"]), len(byName["chat"]), dbSpans, tools)

	// No span of the tree's runs went to another trace.
	recv.mu.Lock()
	defer recv.mu.Unlock()
	ids := map[string]bool{}
	for _, run := range tree {
		ids[fmt.Sprint(run.ID)] = true
	}
	for _, s := range recv.spans {
		if ids[s.attr("gb.run.id")] && s.traceID() != traceID {
			t.Errorf("span %s of run %s is in trace %s", s.span.Name, s.attr("gb.run.id"), s.traceID())
		}
	}
}

func names(spans []otlpSpan) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.span.Name
	}
	return out
}
