package aws

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// Sources of a worker invocation, in its event's "source" field.
const (
	// SourceKick marks an invocation made by Kicker.
	SourceKick = "gb.kick"
	// SourceSweep marks the every-minute scheduled invocation.
	SourceSweep = "gb.sweep"
)

// KickTimeoutDefault bounds one kick, retries included, so that a caller
// (an API request) never waits long for a worker to be woken.
const KickTimeoutDefault = 3 * time.Second

// Invoker is the Lambda API call a Kicker makes.
type Invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Kicker wakes the worker function with an asynchronous invocation: Lambda
// queues the event and returns at once, so a kick costs the caller one
// short API call and never waits for the work.
type Kicker struct {
	// Client makes the call; NewKicker uses the Lambda client of an AWS
	// configuration.
	Client Invoker
	// Function is the worker's name or ARN.
	Function string
	// Timeout bounds one kick; zero means KickTimeoutDefault.
	Timeout time.Duration
}

// NewKicker returns a Kicker of the named function.
func NewKicker(cfg awssdk.Config, function string) *Kicker {
	return &Kicker{Client: lambda.NewFromConfig(cfg), Function: function}
}

// Kick invokes the worker asynchronously with a {"source": "gb.kick"}
// event.
func (k *Kicker) Kick(ctx context.Context) error {
	if k.Function == "" {
		return errors.New("no worker function to kick: set WORKER_FUNCTION_NAME")
	}
	payload, err := json.Marshal(map[string]string{"source": SourceKick})
	if err != nil {
		return fmt.Errorf("error encoding kick: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(k.Timeout, KickTimeoutDefault))
	defer cancel()
	out, err := k.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   awssdk.String(k.Function),
		InvocationType: types.InvocationTypeEvent,
		Payload:        payload,
	})
	if err != nil {
		return fmt.Errorf("error invoking worker %s: %w", k.Function, err)
	}
	if out.FunctionError != nil {
		return fmt.Errorf("worker %s refused the kick: %s", k.Function, *out.FunctionError)
	}
	return nil
}
