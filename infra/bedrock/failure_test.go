package bedrock

import (
	"errors"
	"net/http"
	"testing"

	"github.com/gbresearch/gb/jobs/llm"
)

// Every error type Bedrock documents for Converse is sorted onto the llm
// sentinel the step acts on.
func TestErrorKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code, message string
		status        int
		want          error
	}{
		{"ThrottlingException", "Too many requests, please wait before trying again.", 429, llm.ErrRateLimited},
		{"ServiceQuotaExceededException", "Your request exceeds the service quota for your account.", 400, llm.ErrRateLimited},
		{"ModelNotReadyException", "The model is not ready to serve inference requests.", 429, llm.ErrTransient},
		{"ModelTimeoutException", "The request took too long to process.", 408, llm.ErrTransient},
		{"ModelErrorException", "The request failed due to an error while processing the model.", 424, llm.ErrTransient},
		{"ServiceUnavailableException", "The service isn't currently available.", 503, llm.ErrTransient},
		{"InternalServerException", "An internal server error occurred.", 500, llm.ErrTransient},
		{"ValidationException", "Input is too long for requested model.", 400, llm.ErrContextLength},
		{"ValidationException", "prompt is too long: 210000 tokens > 200000 maximum", 400, llm.ErrContextLength},
		{"ValidationException", "input length and `max_tokens` exceed context limit: 199000 + 8192 > 200000", 400, llm.ErrContextLength},
		{"ValidationException", "A conversation must alternate between user and assistant roles.", 400, llm.ErrPermanent},
		{"ValidationException", "Invocation of model ID anthropic.claude-x with on-demand throughput isn't supported.", 400, llm.ErrPermanent},
		{"AccessDeniedException", "You don't have access to the model with the specified model ID.", 403, llm.ErrPermanent},
		{"ResourceNotFoundException", "Could not resolve the foundation model.", 404, llm.ErrPermanent},
		{"", "", http.StatusBadGateway, llm.ErrTransient},
		{"", "", http.StatusTooManyRequests, llm.ErrRateLimited},
		{"UnrecognizedClientException", "The security token included in the request is invalid.", 403, llm.ErrPermanent},
	} {
		if got := errorKind(tc.code, tc.message, tc.status); !errors.Is(got, tc.want) {
			t.Errorf("%s %q (%d): %v, want %v", tc.code, tc.message, tc.status, got, tc.want)
		}
	}
}
