// Package jobs is the research agent as River jobs on Postgres: the run
// store, the step job (a run's consecutive steps, each one model call and
// its tools committed in one transaction, until the run parks or ends or
// the job hands it over), the tools, the team logic (spawn, wait, cancel,
// limits) and the service the API and the CLI call. The statements of a
// step are in queries.go.
//
// A step's model call (ask.go) is built from the stored conversation and
// compacted to fit its model's window (compaction.go, jobs/compact),
// admitted against the tree's budget (budget.go) and the model's rate
// limit shared through Postgres (ratelimit.go), and written in the ledger
// of calls before it is made and settled after it, whatever happens
// (calls.go). In a worker Lambda, a drain starts only the steps that can
// finish before its deadline (drain.go, deadline.go).
//
// Its OpenTelemetry spans and metrics (telemetry.go, trace.go) use the
// OpenTelemetry API only; the providers come from Deps.
//
// It may import jobs/llm, jobs/compact, jobs/kb, jobs/prompts, jobs/tracectx, jobs/cite and messenger; it knows
// nothing of HTTP, Lambda or the model clients, which reach it through
// llm.Model.
package jobs
