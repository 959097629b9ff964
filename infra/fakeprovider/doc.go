// Package fakeprovider holds what the in-process fake model providers
// (infra/openai/openaifake and infra/bedrock/conversefake) have in common
// below their protocols: the HTTP server they run on and its stop (Server),
// the requests- and tokens-per-minute windows of their rate limits (Bucket,
// Limits), the Meter of what a fake received, admitted and billed, and the
// outage switch (Outage: 503s, 529s, dropped connections or hangs for a set
// time, with its control endpoint at OutagePath).
//
// How a request is read, refused or answered is each fake's own: this
// package knows no wire format and no error body.
//
// It may import jobs/llm only.
package fakeprovider
