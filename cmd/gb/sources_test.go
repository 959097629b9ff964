package main

import (
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs"
)

func TestNoSourcesSaysYetOnlyOfAWorkingRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status string
		tree   bool
		yet    bool
	}{
		{jobs.StatusWorking, false, true}, {jobs.StatusWorking, true, true},
		{jobs.StatusSucceeded, false, false}, {jobs.StatusSucceeded, true, false}, {jobs.StatusFailed, false, false},
	} {
		got := noSources(&jobs.Run{Status: c.status}, c.tree)
		if strings.Contains(got, "yet") != c.yet || (!c.yet && !strings.Contains(got, c.status)) {
			t.Errorf("%s (tree %v): %q", c.status, c.tree, got)
		}
	}
}
