package jobs

import "context"

// AddEventForTest records an event of run, as the step and its tools do.
func AddEventForTest(ctx context.Context, db DB, run *Run, kind string, data map[string]any) error {
	return addEvent(ctx, db, run, kind, data)
}
