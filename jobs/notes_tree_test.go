package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs"
)

// TestNotesStayInTheirTree: a note one user's research remembers, with a
// word nothing else has, is found by that research's agents (a sub-agent
// too), by no research of another user, by another research of the same
// user only when it was started with notes_from naming the first, and by
// none once the first research is deleted; the dataset's documents do not
// grow with it, and search still finds the dataset's documents beside the
// note, in one ranking.
func TestNotesStayInTheirTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, setupOpts{noWork: true})
	if _, err := jobs.CreateKey(ctx, b.pool, "bob"); err != nil {
		t.Fatal(err)
	}
	bob, err := jobs.UserID(ctx, b.pool, "bob")
	if err != nil {
		t.Fatal(err)
	}
	start := func(user int64, from ...int64) *jobs.Run {
		t.Helper()
		r, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: user, Topic: "tides", NotesFrom: from})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tool := func(run int64, name, args string) string {
		t.Helper()
		out, err := b.agent.RunToolForTest(ctx, run, name, args)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	docs := func() int {
		t.Helper()
		var n int
		if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM gb_kb_documents WHERE dataset = $1", jobs.DefaultDataset).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := docs()

	a1 := start(b.userID)
	got := tool(a1.ID, "remember", `{"title": "Quorvexian tides", "text": "Quorvexian barrages hold water; see the WaitGroup of package sync."}`)
	id := strings.TrimSuffix(strings.TrimPrefix(got, "Remembered as document "), ".")
	if after := docs(); after != before {
		t.Errorf("the dataset has %d documents after a note, %d before: a note is not the dataset's", after, before)
	}
	finds := func(run int64) bool {
		t.Helper()
		out := tool(run, "search", `{"query": "quorvexian"}`)
		return strings.Contains(out, "[id "+id+"] Quorvexian tides")
	}
	if !finds(a1.ID) {
		t.Fatal("the research that remembered the note does not find it")
	}
	// One search: the note and the dataset's documents in one ranking.
	mixed := tool(a1.ID, "search", `{"query": "quorvexian WaitGroup", "limit": 10}`)
	if !strings.Contains(mixed, "[id "+id+"] Quorvexian tides") || !strings.Contains(mixed, "https://pkg.go.dev/sync") {
		t.Errorf("a search of the note's tree for a word of the note and one of the dataset:\n%s", mixed)
	}
	if read := tool(a1.ID, "read", `{"id": `+id+`}`); !strings.Contains(read, "Quorvexian barrages hold water") {
		t.Errorf("the tree reads its note: %s", read)
	}
	// A sub-agent of the tree finds it too.
	sub := spawnChild(t, b, a1.ID, "helper")
	if !finds(sub) {
		t.Error("a sub-agent of the tree does not find its note")
	}

	bobs := start(bob)
	if finds(bobs.ID) {
		t.Error("another user's research finds the note")
	}
	if read, err := b.agent.RunToolForTest(ctx, bobs.ID, "read", `{"id": `+id+`}`); err != nil || !strings.Contains(read, "no document with id "+id) {
		t.Errorf("another user's research reads the note: %q, %v", read, err)
	}
	if _, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: bob, Topic: "tides", NotesFrom: []int64{a1.ID}}); !isField(err, "notes_from", fmt.Sprintf("run %d is not one of your researches", a1.ID)) {
		t.Errorf("another user names the research in notes_from: %v", err)
	}
	if _, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "tides", NotesFrom: []int64{sub}}); !isField(err, "notes_from", fmt.Sprintf("run %d is a sub-agent; name its research, run %d", sub, a1.ID)) {
		t.Errorf("notes_from names a sub-agent: %v", err)
	}

	a2 := start(b.userID)
	if finds(a2.ID) {
		t.Error("the owner's second research, started without notes_from, finds the first one's note")
	}
	a3 := start(b.userID, a1.ID, a1.ID)
	if !finds(a3.ID) {
		t.Error("the owner's research started with notes_from naming the first does not find its note")
	}
	// The first research does not see the notes of one that reads its own.
	tool(a3.ID, "remember", `{"title": "Zentrillic", "text": "zentrillic note of the third research"}`)
	if out := tool(a1.ID, "search", `{"query": "zentrillic"}`); !strings.HasPrefix(out, "No documents match") {
		t.Errorf("notes_from let notes flow back:\n%s", out)
	}

	// The first tree's end: it is deleted, and its note with it.
	if _, err := b.agent.Cancel(ctx, b.userID, a1.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.agent.Delete(ctx, b.userID, a1.ID); err != nil {
		t.Fatal(err)
	}
	for _, r := range []int64{a2.ID, a3.ID, bobs.ID} {
		if finds(r) {
			t.Errorf("run %d finds the note of a deleted research", r)
		}
	}
	var left int
	if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM gb_kb_documents WHERE id = "+id).Scan(&left); err != nil || left != 0 {
		t.Errorf("the deleted research's note is still stored (%d, %v)", left, err)
	}
	if after := docs(); after != before {
		t.Errorf("the dataset has %d documents, %d before", after, before)
	}
}

// isField reports whether err is a FieldError of field whose message has want.
func isField(err error, field, want string) bool {
	var fe *jobs.FieldError
	return errors.As(err, &fe) && fe.Field == field && strings.Contains(fe.Msg, want)
}

// spawnChild has root spawn a sub-agent named name and returns its id.
func spawnChild(t *testing.T, b *testBundle, root int64, name string) int64 {
	t.Helper()
	child, err := b.agent.SpawnForTest(context.Background(), root, jobs.SpawnParams{Name: name, Task: "look at the tides", Reason: "the tides need a look of their own"})
	if err != nil {
		t.Fatal(err)
	}
	return child.ID
}
