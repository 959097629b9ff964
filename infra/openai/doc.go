// Package openai is the llm.Model that talks to an OpenAI-compatible
// chat-completions endpoint (OpenAI itself, or any server speaking the same
// protocol at OPENAI_BASE_URL) through github.com/sashabaranov/go-openai.
//
// It holds the configuration (Config, ConfigFromEnv, New); the conversion
// between llm.Request/llm.Response and chat-completion messages and tools,
// which makes odd answers usable (a tool call with no id gets one, NUL
// characters and invalid UTF-8 are cleaned, a call of another type than
// function is dropped); each model's profile (context window, completion
// caps with room to think for reasoning models, prices with the cached
// rate), from a table, GB_MODEL_PROFILES and GB_REASONING_EFFORT; and the
// sorting of failures.
//
// Complete makes exactly one HTTP request and never waits: the caller
// retries through its job queue, where the shared rate limiter lives.
// Every failure is a *llm.CallError wrapping one of llm's sentinels
// (ErrRateLimited with the wait the provider asked for, ErrTooLarge,
// ErrContextLength, ErrUnusable with what the answer cost, ErrTransient,
// ErrPermanent), with the provider's rate limits and whether the request
// was sent.
//
// The API key is sent only in the Authorization header; it is never logged
// nor shown in an error.
//
// It may import jobs/llm and infra/httpwait only.
package openai
