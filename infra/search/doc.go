// Package search holds the web search providers behind jobs.Searcher, one
// file per provider, each with the HTTP client it needs: searxng (a
// self-hosted instance's JSON API), brave (Brave Search API), tavily
// (Tavily search API) and openai (a chat completion with a search-capable
// model, whose URL citations are the results and whose usage is returned).
//
// New builds a provider from a Config; ConfigFromEnv reads one from
// GB_SEARCH_PROVIDER, GB_SEARCH_URL, GB_SEARCH_API_KEY and GB_SEARCH_MODEL
// (and, for openai, OPENAI_BASE_URL and OPENAI_API_KEY); FromEnv does both.
// Every provider retries 429, 5xx and network failures with a bounded
// backoff that honours Retry-After (retry.go), and passes the provider's
// own error text on in the error it returns.
//
// Keys are sent only in the header (or body field) the provider asks for;
// they are never logged nor put in an error.
//
// It may import jobs, jobs/llm, jobs/prompts and infra/httpwait only.
package search
