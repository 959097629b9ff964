// Package conversefake is an in-process Amazon Bedrock Runtime server that
// speaks the Converse API (POST /model/{modelId}/converse) as AWS documents
// it, for tests and benchmarks of clients driven through the real AWS SDK
// (pointed at it with BaseEndpoint).
//
// It checks the request's SigV4 signature (AWS4-HMAC-SHA256) against
// static test credentials, by signing the request again with the SDK's
// signer over the headers the client signed; the model (404
// ResourceNotFoundException); the request's shape, decoded with its own
// wire types so that a client's encoding is checked against the protocol
// (400 ValidationException, as for a toolUse without a toolConfig or roles
// that do not alternate); the model's context window and output limit
// (ValidationException "Input is too long for requested model."); and the
// requests- and tokens-per-minute quotas (429 ThrottlingException). Errors
// carry their type in the X-Amzn-ErrorType header and {"message": ...} in
// the body, as Bedrock writes them.
//
// Prompt caching follows cachePoint blocks: the prefix up to each cache
// point (tools, then system, then messages) is cached for CacheTTL when it
// holds at least its model's MinCacheTokens; a request reads the longest
// cached prefix (cacheReadInputTokens) and writes the rest up to its last
// cache point (cacheWriteInputTokens); inputTokens is what is left. Tokens
// are counted by openaifake.CountTokens.
//
// Answers come from an openaifake.Brain, which sees the request as a chat
// conversation (system, user, assistant with tool calls, tool results), so
// that one scripted policy can drive both fakes. Stats and Calls tell what
// was accepted, throttled and billed.
//
// It may import jobs/llm, infra/fakeprovider and infra/openai/openaifake only.
package conversefake
