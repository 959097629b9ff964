// Package bedrock is the llm.Model that talks to Amazon Bedrock through the
// Converse API (POST /model/{modelId}/converse) with
// github.com/aws/aws-sdk-go-v2/service/bedrockruntime, signed with the
// credentials of the AWS SDK's default chain (the Lambda's role).
//
// It converts an llm.Request into a Converse request: the system prompt as
// system blocks, the conversation as user and assistant messages whose tool
// calls are toolUse blocks and whose tool results are toolResult blocks in
// the next user message, and gb's tools as a toolConfig. It marks the
// stable prefix for prompt caching with cachePoint blocks (after the system
// prompt, after the tools, and at the end of the conversation sent, which
// the next step's request starts with). It converts the answer back: text,
// toolUse blocks as tool calls, the stopReason as an llm finish reason, and
// the usage with the tokens read from and written to the cache, priced
// from a table of the Bedrock models it knows (price.go).
//
// Complete makes exactly one HTTP request: the SDK's own retryer is turned
// off (see newClient) so that the caller's job queue and shared rate
// limiter are the only layer that retries. Every failure is a
// *llm.CallError wrapping one of llm's sentinels (failure.go), with whether
// the request was sent.
//
// It may import jobs/llm and infra/openai (for its profile overrides) only.
package bedrock
