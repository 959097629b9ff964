package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
)

// result is what an invocation returns: how many of the project's
// migrations it applied (0 when the schema was already current), and for
// a CodeDeploy hook the status it reported.
type result struct {
	Applied int    `json:"applied"`
	Hook    string `json:"hook_status,omitempty"`
}

// hookEvent is the event CodeDeploy sends a Lambda deployment's lifecycle
// hook: the hook must report its outcome for these ids with
// PutLifecycleEventHookExecutionStatus, or the deployment waits for it
// until CodeDeploy's hook timeout and fails.
type hookEvent struct {
	DeploymentID string `json:"DeploymentId"`
	ExecutionID  string `json:"LifecycleEventHookExecutionId"`
}

// hookReporter is the CodeDeploy call a hook needs.
type hookReporter interface {
	PutLifecycleEventHookExecutionStatus(context.Context, *codedeploy.PutLifecycleEventHookExecutionStatusInput,
		...func(*codedeploy.Options)) (*codedeploy.PutLifecycleEventHookExecutionStatusOutput, error)
}

// handler applies the migrations and, when CodeDeploy invoked it as a
// hook, reports to CodeDeploy whether they were applied.
type handler struct {
	migrate func(context.Context) (int, error)
	hooks   func(context.Context) (hookReporter, error)
	logger  *slog.Logger
}

// handle serves one invocation. A hook whose migration fails reports
// Failed, which stops the deployment before the new version takes any
// traffic, and the invocation fails with the migration's error too.
func (h handler) handle(ctx context.Context, raw json.RawMessage) (result, error) {
	var ev hookEvent
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &ev); err != nil {
			return result{}, fmt.Errorf("the event is not a JSON object (send {} to migrate, or a CodeDeploy hook event): %w", err)
		}
	}
	if (ev.DeploymentID == "") != (ev.ExecutionID == "") {
		return result{}, errors.New("a CodeDeploy hook event needs both DeploymentId and LifecycleEventHookExecutionId")
	}
	n, err := h.migrate(ctx)
	if ev.DeploymentID == "" {
		return result{Applied: n}, err
	}
	status := types.LifecycleEventStatusSucceeded
	if err != nil {
		status = types.LifecycleEventStatusFailed
	}
	h.logger.InfoContext(ctx, "pre-traffic hook", "deployment", ev.DeploymentID, "applied", n, "status", string(status))
	cd, rerr := h.hooks(ctx)
	if rerr == nil {
		// The report must reach CodeDeploy even when the migration used
		// up the invocation's context.
		rctx := context.WithoutCancel(ctx)
		_, rerr = cd.PutLifecycleEventHookExecutionStatus(rctx, &codedeploy.PutLifecycleEventHookExecutionStatusInput{
			DeploymentId:                  aws.String(ev.DeploymentID),
			LifecycleEventHookExecutionId: aws.String(ev.ExecutionID),
			Status:                        status,
		})
	}
	if rerr != nil {
		rerr = fmt.Errorf("error reporting %s to CodeDeploy for deployment %s: %w", status, ev.DeploymentID, rerr)
	}
	return result{Applied: n, Hook: string(status)}, errors.Join(err, rerr)
}
