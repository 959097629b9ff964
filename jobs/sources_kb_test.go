package jobs_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// TestKnowledgeBaseReadsAreSources: an offline research over the knowledge
// base records every document it read as a source of kind kb, with the
// text it read, so the tree's sources list every document its report cites.
func TestKnowledgeBaseReadsAreSources(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "How does sync.WaitGroup work?"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, run.ID, 60*time.Second)
	if done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	srcs, err := jobs.Sources(ctx, b.pool, done, true)
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	for _, s := range srcs {
		if s.Kind != jobs.SourceKB {
			continue
		}
		if s.Bytes == 0 || !regexp.MustCompile(`^kb:godoc:\d+$`).MatchString(s.RequestedURL) {
			t.Errorf("kb source %+v: want its size and kb:godoc:<id>", s)
		}
		read[s.URL] = true
	}
	cited := regexp.MustCompile(`(?m)^\[\d+\] .+ — (\S+)$`).FindAllStringSubmatch(done.Report, -1)
	if len(cited) == 0 {
		t.Fatalf("the report cites nothing:\n%s", done.Report)
	}
	for _, m := range cited {
		if !read[m[1]] {
			t.Errorf("the report cites %s, which the sources do not list as read (%v)", m[1], read)
		}
	}
	var withBody int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM gb_sources WHERE root_id = $1 AND kind = 'kb' AND body <> ''`,
		run.ID).Scan(&withBody); err != nil || withBody == 0 {
		t.Errorf("kb sources with the text read: %d (%v)", withBody, err)
	}
}
