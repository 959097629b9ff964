package jobs

import (
	"context"
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

func siblingStatus(r *Run) string {
	switch r.Status {
	case StatusSucceeded:
		return "ended"
	case StatusFailed:
		return "ended, failed"
	default:
		return "working"
	}
}
