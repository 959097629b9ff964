// Command migrate is the Lambda that applies the schema (River's migrations,
// then the project's) to the database; it is invoked once after each deploy
// (see docs/serverless.md) and is idempotent.
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/db"
)

// result is what an invocation returns: how many of the project's
// migrations it applied (0 when the schema was already current).
type result struct {
	Applied int `json:"applied"`
}

func main() {
	ctx := context.Background()
	rt, err := gbaws.Setup(ctx, gbaws.SetupParams{AppName: "gb-migrate", MaxConns: 2})
	if err != nil {
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("migrate cannot start", "err", err)
		os.Exit(1)
	}
	lambda.StartHandlerFunc(gbaws.Wrap(rt, func(ctx context.Context, _ json.RawMessage) (result, error) {
		n, err := db.Migrate(ctx, rt.Pool, rt.Logger)
		return result{Applied: n}, err
	}), lambda.WithEnableSIGTERM(rt.Close))
}
