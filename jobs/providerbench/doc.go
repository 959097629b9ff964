// Package providerbench runs research trees against a provider with real
// limits and measures what they cost: the project's OpenAI-compatible fake
// (infra/openai/openaifake), which enforces a context window, requests and
// tokens per minute with OpenAI's 429s and headers, reports cached prompt
// tokens and bills every call it answers, reached through the real model
// client (infra/openai), with pages served on this machine and read through
// the real fetcher (infra/fetch). Each scenario returns the provider's
// figures beside gb's own ledger, so that a test can assert them and
// `gb bench provider` can print them.
//
// Every scenario but OddAnswers also runs on Bedrock's Converse API
// (EnvOptions.ProviderName ProviderBedrock): the project's Converse fake
// (infra/bedrock/conversefake), which checks SigV4 signatures, enforces a
// window and quotas with ThrottlingException and bills cache reads and
// writes, reached through infra/bedrock and the AWS SDK; one scripted
// policy answers behind both fakes.
//
// Scenarios: a long research that reads a new page at every step, with and
// without compaction (LongResearch); many trees against a rate limit
// (RateLimits); a tree with a dollar budget and sub-agents racing for it
// (CostTree); a tree that uses the team's tools, web search, fetch and a
// message between siblings (TeamTree); and a tree meeting each odd answer
// a provider gives (OddAnswers). Beside them: a research and a stream of
// trees riding out a provider's outage (OutageResearch, OutageTrees), a
// provider smaller than gb believes (SmallWindow, SmallTPM, and StaleLimit:
// a configured limit removed), a long research whose writer cites only
// what is still in its prompt (inview.go), and worker processes SIGKILLed
// again and again under a team research (CrashStorm).
//
// It may import jobs and its subpackages, messenger, infra/openai,
// infra/openai/openaifake, infra/bedrock, infra/bedrock/conversefake,
// infra/fakeprovider, infra/fetch and infra/db.
package providerbench
