// Package quality_test checks the reports of the offline research policy
// on the documentation of the whole Go toolchain, through the agent loop.
package quality_test

import (
	"context"
	"go/build"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/messenger"
)

// demoTopic is the topic of `gb demo` (cmd/gb/demo.go).
const demoTopic = "How do goroutines and channels synchronize work, and how does the context package carry " +
	"cancellation and deadlines, and how does net/http serve HTTP requests?"

// TestReportsCiteWhatTheyAreAbout runs the demo topic and the README's
// example through the real agent loop over the documentation of the whole
// Go toolchain, as `gb demo` loads it, and checks the packages each report
// cites.
func TestReportsCiteWhatTheyAreAbout(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the documentation of the whole Go toolchain")
	}
	t.Parallel()
	cases := []struct {
		topic    string
		allowed  []string
		required []string
		mentions []string
		// says and never are patterns the report must and must not match.
		says, never []string
	}{
		{topic: demoTopic, allowed: []string{"sync", "context", "net/http"}, required: []string{"context", "net/http"},
			never: []string{"omithttp2", `(?m)^- (Outside of|It |This |These |Those )`, "do not cover"}},
		// The README's example: "carries" in the package doc is "carry".
		{topic: "What does context carry?", allowed: []string{"context"}, required: []string{"context"},
			mentions: []string{"deadlines"}, never: []string{"do not cover"}},
		{topic: "How does sync.WaitGroup work?", allowed: []string{"sync"}, required: []string{"sync"},
			mentions: []string{"Add", "Done", "Wait"}, never: []string{"do not cover"}},
		// The dataset cannot answer it: the report says so and cites nothing.
		{topic: "How do I configure TLS certificates for a Kubernetes ingress controller?",
			says: []string{"The documents of this dataset do not cover this question", "kubernetes"}},
		// Three parts joined by ", how" and ", and how": each is researched.
		{topic: "How does sync.WaitGroup wait for goroutines, how does context.WithTimeout cancel work, and how does compress/gzip write a file?",
			allowed: []string{"sync", "context", "compress/gzip"}, required: []string{"sync", "context", "compress/gzip"},
			says: []string{`(?m)^### \S+-3 \(run \d+\): succeeded$`}},
	}
	b := newBench(t)
	for _, c := range cases {
		t.Run(c.topic, func(t *testing.T) {
			t.Parallel()
			report := b.research(t, c.topic)
			cited := citedPackages(report)
			t.Logf("cited: %s", strings.Join(cited, ", "))
			for _, p := range cited {
				if !contains(c.allowed, p) {
					t.Errorf("the report cites %s, which the question is not about; it may cite %s", p, strings.Join(c.allowed, ", "))
				}
			}
			for _, p := range c.required {
				if !contains(cited, p) {
					t.Errorf("the report does not cite %s", p)
				}
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("report:\n%s", report)
			}
			for _, p := range c.says {
				if !regexp.MustCompile(p).MatchString(report) {
					t.Errorf("the report does not match %s", p)
				}
			}
			for _, p := range c.never {
				if m := regexp.MustCompile(p).FindString(report); m != "" {
					t.Errorf("the report has %q (%s)", m, p)
				}
			}
			for _, w := range c.mentions {
				if !regexp.MustCompile(`\b` + w + `\b`).MatchString(findings(report)) {
					t.Errorf("the report's findings never mention %s", w)
				}
			}
		})
	}
}

// bench is an agent working on a database holding the godoc dataset.
type bench struct {
	pool   *pgxpool.Pool
	agent  *jobs.Service
	userID int64
}

func newBench(t *testing.T) *bench {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	docs := goDocs(t)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, docs); err != nil {
		t.Fatal(err)
	}
	listener := messenger.NewListener(pool, nil)
	if err := listener.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Stop(context.Background()) })
	a, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}, Work: true,
		Messenger: messenger.NewPostgres(pool, listener, messenger.PostgresConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Stop(sctx)
	})
	if _, err := jobs.CreateKey(ctx, pool, "quality"); err != nil {
		t.Fatal(err)
	}
	uid, err := jobs.UserID(ctx, pool, "quality")
	if err != nil {
		t.Fatal(err)
	}
	return &bench{pool: pool, agent: a, userID: uid}
}

var (
	docsOnce sync.Once
	docsAll  []kb.Document
	docsErr  error
)

// goDocs is the package documentation of the Go toolchain's sources, as
// `gb demo` loads it.
func goDocs(t *testing.T) []kb.Document {
	t.Helper()
	docsOnce.Do(func() {
		root := build.Default.GOROOT
		if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
			root = strings.TrimSpace(string(out))
		}
		docsAll, docsErr = kb.FromPaths([]string{filepath.Join(root, "src")})
	})
	if docsErr != nil {
		t.Fatal(docsErr)
	}
	return docsAll
}

// research runs topic to its end and returns the report.
func (b *bench) research(t *testing.T, topic string) string {
	t.Helper()
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r, err := jobs.GetRun(ctx, b.pool, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Ended() {
			if r.Status != jobs.StatusSucceeded {
				t.Fatalf("research %s: %s", r.Status, r.Error)
			}
			return r.Report
		}
		if time.Now().After(deadline) {
			t.Fatalf("research did not end: status %s state %s", r.Status, r.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var sourceLine = regexp.MustCompile(`(?m)^\[\d+\] .+ — (\S+)$`)

// citedPackages are the import paths of the Go packages a report's
// sources name, sorted; a source that is not a package is named as is.
func citedPackages(report string) []string {
	seen := map[string]bool{}
	var out []string
	_, sources, _ := strings.Cut(report, "\n## Sources\n")
	for _, m := range sourceLine.FindAllStringSubmatch(sources, -1) {
		p := strings.TrimPrefix(m[1], "https://pkg.go.dev/")
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// findings is the report without its sources.
func findings(report string) string {
	f, _, _ := strings.Cut(report, "\n## Sources\n")
	return f
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
