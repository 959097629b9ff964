package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/llm"
)

// The tool read_report pages through the report of one of the run's
// sub-agents, which wait_subagents shows cut; it is read-only. The report
// comes inside its untrusted block, as in wait_subagents.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolReadReport,
			Description: "Read the report of one of your sub-agents from offset, when wait_subagents showed it cut."},
		args:  readReportArgs{},
		state: StateReading,
		read:  readReport,
	})
}

// readReportArgs are the arguments of read_report.
type readReportArgs struct {
	Name   string `json:"name" desc:"the sub-agent's name"`
	Offset int    `json:"offset" desc:"character to read from" optional:"true" min:"0" default:"0"`
}

func readReport(ctx context.Context, env *readEnv, raw json.RawMessage) (readResult, error) {
	var args readReportArgs
	if err := decodeArgs(raw, &args); err != nil {
		return readResult{}, err
	}
	kids, err := awaitedChildren(ctx, env.agent.pool, env.run, []string{args.Name})
	if err != nil {
		return readResult{}, err
	}
	kid := kids[0]
	switch {
	case !kid.Ended():
		return readResult{}, toolErrorf("%q (run %d) is still %s and has no report yet; wait_subagents waits for it", kid.Name, kid.ID, kid.Status)
	case kid.Status != StatusSucceeded:
		return readResult{}, toolErrorf("%q (run %d) ended %s without a report: %s", kid.Name, kid.ID, kid.Status, kid.Error)
	}
	size := env.agent.limitsFor(env.run).MaxReportChars
	part, left := pageSlice(kid.Report, args.Offset, size)
	total := utf8.RuneCountInString(kid.Report)
	end := min(args.Offset, total) + utf8.RuneCountInString(part)
	note := fmt.Sprintf("[characters %d to %d of %d; nothing left]", min(args.Offset, total), end, total)
	if left > 0 {
		note = fmt.Sprintf("[characters %d to %d of %d; %d left: call read_report with \"offset\": %d to read on]",
			args.Offset, end, total, left, end)
	}
	return readResult{text: fmt.Sprintf("## %s (run %d): report\n%s\n%s", kid.Name, kid.ID, note,
		untrusted(env.agent.reportLabel(kid.Name, kid.ID), part))}, nil
}
