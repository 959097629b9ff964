package jobs

import (
	"context"
	"strings"
)

// siblings lists the other sub-agents of the run's parent, oldest first.
func siblings(ctx context.Context, db DB, run *Run) ([]*Run, error) {
	if run.ParentID == nil {
		return nil, nil
	}
	all, err := children(ctx, db, *run.ParentID)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, s := range all {
		if s.ID != run.ID {
			out = append(out, s)
		}
	}
	return out, nil
}

// siblingStatus is how list_siblings shows a sibling: working until it
// ends, then how it ended (a timed-out sibling is "ended, timed out").
func siblingStatus(r *Run) string {
	switch {
	case r.Status == StatusSucceeded:
		return "ended"
	case r.Ended():
		return "ended, " + strings.ReplaceAll(r.Status, "_", " ")
	default:
		return "working"
	}
}
