// Package aws is what the Lambda functions need of AWS and of their
// runtime: the setup every function does once per execution environment
// (settings, secrets from Secrets Manager, the pgx pool with an optional
// RDS IAM auth token per connection, the Lambda logger), and the kick that
// wakes a worker through an asynchronous Lambda Invoke.
//
// It may import infra/config, infra/db, infra/logs, infra/offline, infra/openai,
// infra/search and jobs/llm; it knows nothing of HTTP routes, jobs or River.
package aws
