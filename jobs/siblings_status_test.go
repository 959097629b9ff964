package jobs

import "testing"

// A sibling's line in list_siblings says whether it ended and how: a
// timed-out or failed sibling is never shown as working.
func TestSiblingStatusNamesEveryEnd(t *testing.T) {
	cases := map[string]string{
		StatusQueued:    "working",
		StatusWorking:   "working",
		StatusWaiting:   "working",
		StatusSucceeded: "ended",
		StatusFailed:    "ended, failed",
		StatusTimedOut:  "ended, timed out",
	}
	for status, want := range cases {
		if got := siblingStatus(&Run{Status: status}); got != want {
			t.Errorf("siblingStatus(%s) = %q, want %q", status, got, want)
		}
	}
}
