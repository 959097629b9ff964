// Command migrate is the Lambda that applies the schema (River's migrations,
// then the project's) to the database. It is idempotent, and it is invoked
// two ways: by CodeDeploy as the pre-traffic hook of each function's
// deployment (template.yaml's DeploymentPreference), so the schema is
// current before any new version takes traffic, and by hand with any other
// event (docs/serverless.md).
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"

	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/db"
)

func main() {
	ctx := context.Background()
	rt, err := gbaws.Setup(ctx, gbaws.SetupParams{AppName: "gb-migrate", MaxConns: 2})
	if err != nil {
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("migrate cannot start", "err", err)
		os.Exit(1)
	}
	h := handler{
		migrate: func(ctx context.Context) (int, error) { return db.Migrate(ctx, rt.Pool, rt.Logger) },
		hooks: func(ctx context.Context) (hookReporter, error) {
			if rt.AWS != nil {
				return codedeploy.NewFromConfig(*rt.AWS), nil
			}
			cfg, err := awsconfig.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, err
			}
			return codedeploy.NewFromConfig(cfg), nil
		},
		logger: rt.Logger,
	}
	lambda.StartHandlerFunc(gbaws.Wrap(rt, func(ctx context.Context, ev json.RawMessage) (result, error) {
		return h.handle(ctx, ev)
	}), lambda.WithEnableSIGTERM(rt.Close))
}
