package compact

import (
	"testing"

	"github.com/gbresearch/gb/jobs/llm"
)

// BenchmarkFit fits a 300-message research into a 128k window.
func BenchmarkFit(b *testing.B) {
	msgs := research(130)
	n := 300
	for msgs[n].Role != llm.RoleAssistant {
		n--
	}
	req := request(msgs[:n], 4096)
	cfg := Config{Window: 128000}
	var res Result
	for b.Loop() {
		res = Fit(req, cfg, 0)
	}
	b.ReportMetric(float64(n), "messages")
	b.ReportMetric(float64(res.Stubbed), "stubs")
}
