/*
Package jobs is the research agent as River jobs on Postgres. A research is
a tree of runs: a root that the owner started and the sub-agents it spawned.
Each run advances by steps, and a step is one model call, the tools the
model asked for, and one transaction that records it all and says what
comes next: another step, a park until something the run waits for, or the
run's end. Every transaction that ends, parks or resumes a run, or
writes a tree's events, locks the tree's root row first (lockTree), so a
tree's writers queue on its root and its events are numbered in the order
they commit.

The package is one package, not several, because the step, the team and
the run store take part in the same transactions. This comment is its map:
which file holds what, then where to look for a behaviour.

# The step and its commit

A step job (StepArgs, worked by step_worker.go) makes the consecutive steps
of one run, each its own transaction, until the run parks or ends or the
job hands the run over after Config.Slice. The step itself is in step.go,
as a short sequence of phases: prepare (load the run), stepContext, prelude,
callModel, newStepCommit, beforeCommit and record. The model call is in
ask.go: the request is assembled in prompt.go, fitted to the model's window
in compaction.go (with jobs/compact), and admitted against the budget and
the rate limit. The step's transaction is commit.go; its record and its
details are steps_record.go; the statements it runs are named in
queries.go. A transaction that opens with a batch sends its BEGIN in it
(tx.go). A failed step is handled in stepWorker.work: retried, put back
without spending an attempt, or, on its last attempt, its run ended.

# Tools

tools.go is the registry and what a tool sees (toolEnv); each tool is a
file of its own, tool_<name>.go. A tool's arguments are declared once, as
the Go struct they decode into (toolargs.go, decoded and checked by
toolargs_decode.go), and its spec's schema comes from that declaration.
Read-only tools (search, read, web_search, fetch) run before the step's
transaction (readonly.go); the others run inside it. What strangers may
have written reaches the model inside an untrusted block (untrusted.go).
The web tools' providers are interfaces (web.go); what agents read is kept
as sources (sources.go). Text helpers are in text.go.

# The team

team.go holds the tree's limits, spawning (spawn_subagent) and the wait for
sub-agents (wait_subagents parks the parent; maybeResume resumes it in the
transaction that ends its last awaited sub-agent, maybeResumeAfter when
that transaction read the tree with its lock). end.go is the one way a
run ends (endRun): its working descendants first, then the run, then its
parent's resume. timeout.go ends sub-agents past their type's wall-clock
cap. Messages between agents go through the messenger (messages.go:
inboxes, limits, the owner's messages to a sub-agent); a read_messages
that waits long parks the run (message_wait.go). siblings.go lists a run's
siblings. The types of sub-agents and their caps are in types.go, their
prompts in jobs/prompts.

# Budget and rate limits

budget.go keeps a tree within its budget: each call reserves what it may
cost, with the root locked, and a share is kept for the root's report;
budget_start.go checks a budget a research asks for (and refuses a dollar
budget on a model with no price). ratelimit.go shares each model's
provider limits among all workers through Postgres, the lower of the
configured and the provider's governing; windows.go keeps the context
window a provider's refusal showed smaller than the profile's, read with
the TPM at each call so that requests fit both. breaker.go is each
model's circuit breaker: after transient failures in a row only one
probe call at a time goes out. outage.go is how a step waits out a
provider that is down (state waiting_provider, up to the outage horizon). calls.go
is the ledger of model calls, one row a call, settled whatever happens to
its step.

# The run store

run.go is the run (Run, its statuses and states), reading it, and
lockTree/lockTreeByID, the tree lock every writer takes. service.go is what
the API and the CLI call to start, cancel, read and delete researches.
events.go is a tree's timeline, steps.go the query of its steps, details.go
its totals, users.go the users and their API keys, unavailable.go the test
for an unreachable database. behaviour.go pins a research to the version
of what shapes it (its prompts, from jobs/prompts' Set, its agent types,
tool schemas, model profiles and limits: a bundle stored once by hash),
which every later step's request is built from, across deploys unless
Config.Pin says latest. fork.go starts a research that replays a recorded
root's first steps from the record (fork_copy.go copies them, with the
sub-agents whose reports were read, their sources and notes) and goes on
live from there.

# Citations

citations.go checks a report's citations (with jobs/cite), in the
transaction that records it, against what the tree's agents read
(citations_docs.go) and, by the research's mode, leaves the report as it
is, marks the unsupported claims, or gives the root one more step to
revise it (citations_revise.go: the note, whether the revision can run,
and why not when it cannot); citations_judge.go has a language model
judge every cited claim, in batched calls, before the transaction.

# The worker runtime

agent.go builds the Service (Config, Deps, New), the whole of the
process's research agents (the River client, the maintenance pass, the
webhooks and the run store), and starts and stops it.
lifecycle.go runs what goes beside the River client: the liveness lock
(liveness.go) and the maintenance loop. drain.go works the queue for a
bounded time, one worker Lambda invocation, and deadline.go keeps it from
starting a step that cannot finish. maintain.go is the maintenance pass:
it rescues the jobs of dead workers and of stuck ones, schedules due jobs,
repairs runs left with no way forward (reconcile.go) and deletes finished
jobs past their retention.
river_internals.go holds every use of River that its public API does not
serve, with why.

# Telemetry, webhooks, owner questions and plans

telemetry.go is the OpenTelemetry spans and metrics, trace.go carries a
tree's trace across jobs and processes (with jobs/tracectx). A root's
webhook is inserted with its end (webhook_enqueue.go), signed
(webhook_sign.go) and delivered by a job (webhook_worker.go); webhook.go
says what a webhook is and where it may go, webhook_list.go what a
delivery carries and how its attempts are listed. ask_owner
parks a root until its owner answers (owner_wait.go), and plan.go is plan
approval, which parks the same way.

# Where to look

  - Limits: of a tree in team.go, of a user in service.go, of messages in
    messages.go, of each tool's arguments in its struct (tool_<name>.go),
    of a sub-agent type in types.go, of money and tokens in budget.go and
    Config (agent.go), of providers in ratelimit.go.
  - Ending: endRun (end.go); endAfter (step.go) for an end outside a
    step's commit; timeout.go for the wall-clock cap; reconcile.go for a
    run whose job was lost.
  - Waits: park and maybeResume (team.go) for sub-agents, message_wait.go
    for messages and the wake job at a wait's deadline, owner_wait.go for
    the owner; reconcile.go repairs a wait that lost its way out.
  - Messaging rules: an agent writes to its siblings by name
    (tool_send_message.go) and a parent to its sub-agents
    (tool_send_input.go); the owner writes to a sub-agent (SendFromUser,
    messages.go); a root has no inbox.
  - Prompt assembly: prompt.go, from the parts in jobs/prompts and the
    run's type (types.go).
  - Compaction: compaction.go and jobs/compact.
  - Ledger: calls.go.

It may import jobs/llm, jobs/compact, jobs/doctext, jobs/kb, jobs/prompts, jobs/tracectx, jobs/cite and messenger; it knows
nothing of HTTP, Lambda or the model clients, which reach it through
llm.Model.
*/
package jobs
