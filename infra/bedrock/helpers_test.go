package bedrock_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/gbresearch/gb/infra/bedrock"
	"github.com/gbresearch/gb/infra/bedrock/conversefake"
)

// newFake starts a Converse fake for the test.
func newFake(t *testing.T, cfg conversefake.Config) *conversefake.Server {
	t.Helper()
	f := conversefake.New(cfg)
	t.Cleanup(f.Close)
	return f
}

// awsConfig is an AWS configuration with the fake's static credentials.
func awsConfig(f *conversefake.Server) *aws.Config {
	c := f.Config()
	return &aws.Config{Region: c.Region,
		Credentials: credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")}
}

// newModel is a model of the real client on the fake, through the SDK.
func newModel(t *testing.T, f *conversefake.Server, model string) *bedrock.Model {
	t.Helper()
	m, err := bedrock.New(context.Background(), bedrock.Config{Model: model, Endpoint: f.URL(), AWS: awsConfig(f),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
