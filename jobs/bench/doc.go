// Package bench measures the research agent on a real database, each
// figure beside a baseline measured in the same run: agent steps beside
// River jobs that chain themselves the way steps do, the pickup of a
// step beside River's, a spawn and a resume beside River's insert-to-start,
// a message wake beside a bare LISTEN/NOTIFY round trip, with the CPU
// (this process's and, on the same machine, Postgres's) and the round
// trips each costs. Run builds the whole table that `gb bench` prints; its
// parts (StepTimes, Chains, InsertToStart, the scripted models) also serve
// the benchmarks of package jobs.
//
// Everything it creates (users, a dataset, runs, River jobs and queues) is
// named for the run and deleted when the run ends, and its River queues are
// its own, so it can run on a database that live workers use.
//
// It may import jobs, jobs/kb, jobs/llm, messenger and infra/db.
package bench
