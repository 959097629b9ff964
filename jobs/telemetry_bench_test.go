package jobs_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/telemetry"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/bench"
)

// BenchmarkStepTracing measures what OpenTelemetry costs a step: the same
// researches (4 at once, 10 steps each, a zero-latency model that searches
// the knowledge base on every step) run on an agent with telemetry off and
// on one with tracing exported over OTLP/HTTP to a receiver in the test
// and metrics gathered, alternately, each on its own queue. It reports
// the median time of a step (its start to its commit) with each, and
// on/off, their ratio. Run it with
//
//	go test -run XXX -bench StepTracing -benchtime 20x ./jobs/
func BenchmarkStepTracing(b *testing.B) {
	ctx := context.Background()
	pool := dbtest.NewPool(b)
	benchDocs(b, pool)
	users := benchUsers(b, pool, 4)
	var exported atomic.Int64 // bytes of spans the receiver got
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		exported.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(sink.Close)
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	tel := telemetry.New(exp, sdkmetric.NewManualReader(), "gb-bench")
	b.Cleanup(func() { _ = tel.Shutdown(context.Background()) })

	start := func(queue string, d jobs.Deps) (*jobs.Service, *bench.StepTimes) {
		obs := bench.NewStepTimes(nil)
		d.Pool, d.Model, d.Observer, d.Logger, d.Work = pool, searchingModel(), obs, quietLogger(), true
		d.Config = jobs.Config{Queue: queue, Guest: queue != "gb_trace_off"}
		a, err := jobs.New(d)
		if err == nil {
			err = a.Start(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = bench.StopAgent(a) })
		return a, obs
	}
	off, offTimes := start("gb_trace_off", jobs.Deps{})
	on, onTimes := start("gb_trace_on", jobs.Deps{Tracer: tel.Tracer, Meter: tel.Meter})
	round := func(a *jobs.Service, times *bench.StepTimes, queue string) []time.Duration {
		st, err := bench.AgentRuns(ctx, a, times, bench.RunsParams{Users: users, Runs: 4, Steps: 10, Queue: queue})
		if err != nil {
			b.Fatal(err)
		}
		return st.Work
	}
	round(off, offTimes, "gb_trace_off") // warm both up
	round(on, onTimes, "gb_trace_on")
	var workOff, workOn []time.Duration
	b.ResetTimer()
	for range b.N {
		workOff = append(workOff, round(off, offTimes, "gb_trace_off")...)
		workOn = append(workOn, round(on, onTimes, "gb_trace_on")...)
	}
	b.StopTimer()
	if err := tel.Flush(ctx); err != nil || exported.Load() == 0 {
		b.Fatalf("the traced agent exported no spans (%v)", err)
	}
	mOff, mOn := pct(workOff, .50), pct(workOn, .50)
	b.ReportMetric(msf(mOff), "ms/step-off")
	b.ReportMetric(msf(mOn), "ms/step-on")
	b.ReportMetric(float64(mOn)/float64(mOff), "on/off")
	b.Logf("median step %s with telemetry off, %s on (%d and %d steps); p90 %s and %s",
		ms(mOff), ms(mOn), len(workOff), len(workOn), ms(pct(workOff, .90)), ms(pct(workOn, .90)))
}
