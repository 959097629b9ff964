// Package openai is the llm.Model that talks to an OpenAI-compatible
// chat-completions endpoint (OpenAI itself, or any server speaking the same
// protocol at OPENAI_BASE_URL) through github.com/sashabaranov/go-openai.
//
// It holds the configuration (Config, ConfigFromEnv, New), the conversion
// between llm.Request/llm.Response and chat-completion messages and tools,
// the retry policy (429, 5xx and network errors are retried with jittered
// exponential backoff; other failures wrap llm.ErrPermanent) and a small
// table of list prices used to fill llm.Usage.CostUSD.
//
// The API key is sent only in the Authorization header; it is never logged
// nor put in an error.
//
// It may import jobs/llm and infra/httpwait only.
package openai
