// Package openaifake is an in-process chat-completions server (POST
// /v1/chat/completions) that enforces what OpenAI's API enforces and
// misbehaves on demand, for tests and benchmarks of clients.
//
// It checks the Bearer key (401), the model (404), the request as OpenAI
// documents it, decoded with its own wire types so that a client's encoding
// is checked against the protocol, not against a library (400), the
// model's context window (400 context_length_exceeded) and the requests-
// and tokens-per-minute limits (429, with OpenAI's bodies and x-ratelimit-*,
// retry-after and retry-after-ms headers). One set of rate-limit buckets is
// shared by all models, as if every model had the same limits.
//
// Tokens are counted by a deterministic tokenizer (CountTokens) that is not
// four bytes a token: runs of letters and digits count a token per four
// runes, every other rune that is not a space one token, so that text dense
// in punctuation (JSON) counts more than a bytes/4 estimate. Prompt caching
// follows OpenAI's rules (a prefix of at least 1024 tokens, in steps of
// 128), and reasoning models spend and report reasoning tokens.
//
// Answers come from a Brain; faults (empty choices, refusals, tool calls
// without ids, NUL bytes, invalid UTF-8, cut arguments, 5xx, hangs, bodies
// that are not JSON) come from the Brain's Answer or from Server.Inject.
// An outage (Server.StartOutage, or POST to the control endpoint
// fakeprovider.OutagePath) fails every request for a set time, before its
// checks and limits and unbilled: 503s, 529 "overloaded", dropped
// connections or hangs.
// Stats, Calls and Log tell what was accepted, billed and refused.
//
// Where it departs from the API: a request without a completion cap counts
// its model's DefaultCompletion against the context window and the TPM
// limit (the API lets such a request use what the window leaves); a "Request
// too large" 429 has no retry-after, since no wait lets it through; it does
// not stream, and takes only n=1 and text content parts.
//
// It may import jobs/llm and infra/fakeprovider only.
package openaifake
