package openaifake

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// reasoningEfforts are the reasoning_effort values a reasoning model takes.
var reasoningEfforts = []string{"minimal", "low", "medium", "high"}

// validate checks req against its model and fills its CompletionCap, as
// the API does before it counts tokens.
func validate(req *Request, spec ModelSpec) *apiError {
	if err := checkToolReplies(req.Messages); err != nil {
		return err
	}
	if req.ToolChoice == "function" && !slices.ContainsFunc(req.Tools, func(t Tool) bool { return t.Name == req.ToolChoiceName }) {
		return badRequest("tool_choice", "invalid_value",
			"Invalid value for 'tool_choice': function '%s' is not one of the tools.", req.ToolChoiceName)
	}
	var err *apiError
	if spec.Reasoning {
		err = checkReasoningParams(req)
	} else {
		err = checkSamplingParams(req)
	}
	if err != nil {
		return err
	}
	return setCap(req, spec)
}

// checkReasoningParams refuses what a reasoning model does not take.
func checkReasoningParams(req *Request) *apiError {
	if req.MaxTokens != nil {
		return errUnsupportedParameter("max_tokens", " Use 'max_completion_tokens' instead.")
	}
	if t := req.Temperature; t != nil && *t != 1 {
		return badRequest("temperature", "unsupported_value", "Unsupported value: 'temperature' does not support %s "+
			"with this model. Only the default (1) value is supported.", formatNumber(*t))
	}
	if e := req.ReasoningEffort; e != "" && !slices.Contains(reasoningEfforts, e) {
		return badRequest("reasoning_effort", "unsupported_value", "Unsupported value: 'reasoning_effort' does not "+
			"support '%s' with this model. Supported values are: 'minimal', 'low', 'medium', and 'high'.", e)
	}
	return nil
}

// checkSamplingParams refuses what a model that does not reason does not take.
func checkSamplingParams(req *Request) *apiError {
	if req.ReasoningEffort != "" {
		return errUnsupportedParameter("reasoning_effort", "")
	}
	if t := req.Temperature; t != nil && *t > 2 {
		return badRequest("temperature", "decimal_above_max_value", "Invalid 'temperature': decimal above "+
			"maximum value. Expected a value <= 2, but got %s instead.", formatNumber(*t))
	}
	if t := req.Temperature; t != nil && *t < 0 {
		return badRequest("temperature", "decimal_below_min_value", "Invalid 'temperature': decimal below "+
			"minimum value. Expected a value >= 0, but got %s instead.", formatNumber(*t))
	}
	return nil
}

// setCap checks the completion caps sent and sets the one in effect:
// max_completion_tokens, else max_tokens, else the model's default.
func setCap(req *Request, spec ModelSpec) *apiError {
	req.CompletionCap = spec.completionCap()
	for _, p := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if p.v == nil {
			continue
		}
		if *p.v < 1 {
			return badRequest(p.name, "integer_below_min_value", "Invalid '%s': integer below minimum value. "+
				"Expected a value >= 1, but got %d instead.", p.name, *p.v)
		}
		if spec.MaxCompletion > 0 && *p.v > spec.MaxCompletion {
			return badRequest(p.name, "invalid_value", "%s is too large: %d. This model supports at most %d "+
				"completion tokens, whereas you provided %d.", p.name, *p.v, spec.MaxCompletion, *p.v)
		}
		req.CompletionCap = *p.v // max_completion_tokens comes last and wins
	}
	return nil
}

// checkToolReplies checks that each tool message answers a call of the
// assistant message before it, and that every call is answered before
// the conversation goes on.
func checkToolReplies(msgs []Message) *apiError {
	var pending []string // ids of calls not answered yet
	pendingAt := 0
	for i, m := range msgs {
		if m.Role == "tool" {
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				return badRequest(fmt.Sprintf("messages.[%d].role", i), "", "Invalid parameter: messages with "+
					"role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			pending = slices.Delete(pending, j, j+1)
			continue
		}
		if len(pending) > 0 {
			return errUnanswered(pendingAt, pending)
		}
		pending, pendingAt = nil, i
		for _, c := range m.ToolCalls {
			pending = append(pending, c.ID)
		}
	}
	if len(pending) > 0 {
		return errUnanswered(pendingAt, pending)
	}
	return nil
}

func errUnanswered(at int, ids []string) *apiError {
	return badRequest(fmt.Sprintf("messages.[%d].role", at), "", "An assistant message with 'tool_calls' must be "+
		"followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have "+
		"response messages: %s", strings.Join(ids, ", "))
}

// formatNumber writes a JSON number as the API echoes it (0, 0.2, 1.5).
func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
