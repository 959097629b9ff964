// Command echo is a Lambda function for the emulator harness's own tests:
// it answers each event with the event, after waiting the event's "sleep"
// (a Go duration), if any.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(ctx context.Context, event json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Sleep string `json:"sleep"`
		}
		if err := json.Unmarshal(event, &in); err != nil {
			return nil, fmt.Errorf("the event is not a JSON object: %w", err)
		}
		if in.Sleep != "" {
			d, err := time.ParseDuration(in.Sleep)
			if err != nil {
				return nil, fmt.Errorf("sleep %q is not a Go duration: %w", in.Sleep, err)
			}
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return event, nil
	})
}
