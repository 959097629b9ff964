package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/gbresearch/gb/jobs"
)

// envFaultKill names the step points at which a worker kills itself, for
// chaos tests: "point:probability,…" with the points of jobs.Fault*, for
// example "after_model:0.02,before_commit:0.02". It is a testing aid and
// is never set in a deployment.
const envFaultKill = "GB_FAULT_KILL"

// faultHook parses GB_FAULT_KILL into a jobs fault hook that SIGKILLs the
// process at a point with its probability; nil when the variable is unset.
func faultHook(spec string) (func(string), error) {
	if spec == "" {
		return nil, nil
	}
	known := map[string]bool{jobs.FaultAfterModel: true, jobs.FaultAfterTools: true,
		jobs.FaultBeforeCommit: true, jobs.FaultAfterCommit: true}
	odds := map[string]float64{}
	for _, part := range strings.Split(spec, ",") {
		point, p, ok := strings.Cut(strings.TrimSpace(part), ":")
		prob, err := strconv.ParseFloat(p, 64)
		if !ok || !known[point] || err != nil || prob < 0 || prob > 1 {
			return nil, fmt.Errorf("%s: %q is not point:probability with a point among after_model, after_tools, "+
				"before_commit, after_commit and a probability from 0 to 1", envFaultKill, part)
		}
		odds[point] = prob
	}
	return func(point string) {
		if p := odds[point]; p > 0 && rand.Float64() < p {
			fmt.Fprintf(os.Stderr, "fault injection: killing the worker at %s\n", point)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}, nil
}
