// Package jobs is the research agent as River jobs on Postgres: the run
// store, the step job (a run's consecutive steps, each one model call and
// its tools committed in one transaction, until the run parks or ends or
// the job hands it over), the tools, the team logic (spawn, wait, cancel,
// limits) and the service the API and the CLI call. The statements of a
// step are in queries.go.
//
// It may import jobs/llm, jobs/kb, jobs/prompts and messenger; it knows
// nothing of HTTP, Lambda or the model clients, which reach it through
// llm.Model.
package jobs
