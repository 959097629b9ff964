package main

import (
	"reflect"
	"strings"
	"testing"
)

// TestREADMEBlocksAreClassified checks the walk's reading of a README: the
// shell blocks only, continuations joined, and each line run, skipped
// (with the reason) or refused as the convention of TestREADMEWalk says.
func TestREADMEBlocksAreClassified(t *testing.T) {
	readme := strings.Join([]string{
		"# t",
		"```sh",
		`id=$(bin/gb research start "a # b" \`,
		`     --interactive)   # prints its id`,
		"# a comment line",
		"until bin/gb research get $id -o json | jq -e '.ended_at' >/dev/null; do sleep 1; done",
		"GB_FETCH_ALLOW=127.0.0.1/32:9000 bin/gb dev & dev=$!",
		"bin/gb webhooks listen --addr 127.0.0.1:9000",
		"bin/gb webhooks listen --count 1",
		"bin/gb webhooks set https://YOUR-RECEIVER/gb   # needs a public https URL of yours",
		"infra/test.sh",
		"sam deploy",
		"gb eval",
		`export DATABASE_URL=$(infra/pg.sh start) KEY=$(jq .id <<<"$laptop" 2>/dev/null)`,
		"```",
		"",
		"```json",
		`{"a": 1}`,
		"```",
		"",
		"It runs in a browser. Needs root and the network: apt-get",
		"installs it.",
		"",
		"```bash",
		"apt-get install -y chromium && (cd e2e && npm ci)",
		"```",
	}, "\n")
	blocks := parseREADME(readme)
	if len(blocks) != 2 {
		t.Fatalf("%d shell blocks, want 2: %+v", len(blocks), blocks)
	}
	want := []struct {
		line          int
		skip, problem string
		sets          []string
	}{
		{3, "", "", []string{"id"}},
		{6, "", "", nil},
		{7, "", "", []string{"dev"}},
		{8, "", "starts a server (gb webhooks listen) in the foreground, where it never ends: end the command with &", nil},
		{9, "", "", nil},
		{10, "needs a public https URL of yours", "", nil},
		{11, "the test suite, which runs this walk", "", nil},
		{12, "", "runs sam, which the walk cannot run offline", nil},
		{13, "", "runs gb, which is not on PATH after the README's steps (they build bin/gb)", nil},
		{14, "", "", []string{"DATABASE_URL", "KEY"}},
	}
	got := blocks[0].lines
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.line != w.line || g.skip != w.skip || g.problem != w.problem || !reflect.DeepEqual(g.sets, w.sets) {
			t.Errorf("line %d: got line %d skip %q problem %q sets %q, want %+v", i, g.line, g.skip, g.problem, g.sets, w)
		}
	}
	if got[0].n != 2 || blocks[0].needs != "" {
		t.Errorf("the continued line spans %d lines; the first block needs %q", got[0].n, blocks[0].needs)
	}
	if c := helpCheck(got[5]); c != "bin/gb webhooks set https://YOUR-RECEIVER/gb --help >/dev/null" {
		t.Errorf("the skipped gb line is checked with %q", c)
	}
	if c := helpCheck(got[2]); c != "" {
		t.Errorf("a line with a server in the background is checked with %q", c)
	}
	if b := blocks[1]; b.needs != "Needs root and the network: apt-get installs it." || b.lines[0].problem == "" {
		t.Errorf("the marked block: needs %q, line %+v", b.needs, b.lines[0])
	}
}
