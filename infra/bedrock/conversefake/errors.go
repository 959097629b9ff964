package conversefake

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Error types, as Bedrock names them in X-Amzn-ErrorType.
const (
	TypeValidation       = "ValidationException"
	TypeThrottling       = "ThrottlingException"
	TypeAccessDenied     = "AccessDeniedException"
	TypeNotFound         = "ResourceNotFoundException"
	TypeInternal         = "InternalServerException"
	TypeUnavailable      = "ServiceUnavailableException"
	TypeModelTimeout     = "ModelTimeoutException"
	TypeBadSignature     = "InvalidSignatureException"
	TypeUnknownClient    = "UnrecognizedClientException"
	TypeMissingAuthToken = "MissingAuthenticationTokenException"
)

// awsError is a refusal as Bedrock writes it.
type awsError struct {
	status  int
	typ     string
	message string
}

func errorf(status int, typ, format string, args ...any) *awsError {
	return &awsError{status: status, typ: typ, message: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *awsError {
	return errorf(http.StatusBadRequest, TypeValidation, format, args...)
}

// write writes the error: its type in X-Amzn-ErrorType (with the
// namespace suffix Bedrock adds) and {"message": ...} in the body.
func (e *awsError) write(w http.ResponseWriter) {
	w.Header().Set("X-Amzn-ErrorType", e.typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	b, _ := json.Marshal(map[string]string{"message": e.message})
	_, _ = w.Write(b)
}
