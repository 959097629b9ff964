// Package jobs is the research agent as River jobs on Postgres: the run
// store, the step job (one model call and its tools, committed in one
// transaction), the tools, the team logic (spawn, wait, cancel, limits) and
// the service the API and the CLI call.
//
// It may import jobs/llm, jobs/kb, jobs/prompts and messenger; it knows
// nothing of HTTP, Lambda or the model clients, which reach it through
// llm.Model.
package jobs
