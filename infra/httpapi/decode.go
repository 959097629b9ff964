package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON fields each route's body takes, exactly as spelled.
var (
	createFields = []string{"topic", "max_steps", "dataset", "max_cost_usd", "max_tokens", "webhook_url",
		"interactive", "answer_timeout_seconds", "approve_plan", "citations", "notes_from"}
	messageFields = []string{"text"}
	answerFields  = []string{"text"}
	planFields    = []string{"decision", "subagents", "note"}
)

// bodyError is a request body that cannot be decoded: a 400 naming the
// field at fault, if one is.
type bodyError struct {
	Code, Field, Msg string
}

// Error implements error.
func (e *bodyError) Error() string { return e.Field + ": " + e.Msg }

// decodeBody reads a JSON body into v strictly: at most MaxBodyBytes (else
// 413), received in time (else 408), valid UTF-8, exactly one JSON object
// whose keys are each exactly one of allowed, each value of its Go type.
// Otherwise it answers 400 naming the field and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, allowed []string) bool {
	body, ok := readBody(w, r)
	if !ok {
		return false
	}
	if e := decodeStrict(body, v, allowed); e != nil {
		writeError(w, http.StatusBadRequest, e.Code, e.Field, e.Msg)
		return false
	}
	return true
}

// readBody reads the whole body, or answers why it could not.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var (
		tooBig *http.MaxBytesError
		netErr net.Error
	)
	switch {
	case err == nil:
		return body, true
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "", fmt.Sprintf("request body is over %d bytes", MaxBodyBytes))
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		writeError(w, http.StatusRequestTimeout, "request_timeout", "", "the request body was not received in time")
	default:
		writeError(w, http.StatusBadRequest, "invalid_json", "", "could not read request body")
	}
	return nil, false
}

// decodeStrict decodes body into v, or says why it will not.
func decodeStrict(body []byte, v any, allowed []string) *bodyError {
	fields, e := objectFields(body)
	if e != nil {
		return e
	}
	if e := checkFields(fields, allowed); e != nil {
		return e
	}
	if !utf8.Valid(body) {
		// Every value is valid: a key is not (and so is no allowed field).
		return &bodyError{"invalid_json", "", "request body is not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &bodyError{"invalid_request", te.Field, te.Field + ": " + typeMessage(te)}
		}
		return &bodyError{"invalid_json", "", "request body is not valid JSON for this call: " + err.Error()}
	}
	return nil
}

// objectFields parses body as exactly one JSON object.
func objectFields(body []byte) (map[string]json.RawMessage, *bodyError) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	err := dec.Decode(&fields)
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return nil, &bodyError{"invalid_json", "", "request body is empty; send a JSON object"}
	case errors.As(err, &te):
		return nil, &bodyError{"invalid_json", "", "request body must be a JSON object, not a JSON " + te.Value}
	case err != nil:
		return nil, &bodyError{"invalid_json", "", "request body is not valid JSON: " + err.Error()}
	case fields == nil:
		return nil, &bodyError{"invalid_json", "", "request body must be a JSON object, not null"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &bodyError{"invalid_json", "", "request body has data after the JSON object"}
	}
	return fields, nil
}

// checkFields refuses a key that is not exactly an allowed field (JSON keys
// are case-sensitive here, unlike in encoding/json) and a value that is not
// valid UTF-8, which encoding/json would silently replace with U+FFFD.
func checkFields(fields map[string]json.RawMessage, allowed []string) *bodyError {
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(allowed, k) {
			return &bodyError{"invalid_request", k, unknownFieldMessage(k, allowed)}
		}
		if raw := fields[k]; !utf8.Valid(raw) || hasLoneSurrogate(raw) {
			return &bodyError{"invalid_request", k, k + ": must be valid UTF-8 text (a \\u escape of a lone UTF-16 surrogate is not)"}
		}
	}
	return nil
}

func unknownFieldMessage(k string, allowed []string) string {
	msg := fmt.Sprintf("unknown field %q; allowed: %s", k, strings.Join(allowed, ", "))
	for _, a := range allowed {
		if strings.EqualFold(a, k) {
			msg += fmt.Sprintf(" (field names are case-sensitive: did you mean %q?)", a)
		}
	}
	return msg
}

// typeMessage says what type a field must have.
func typeMessage(te *json.UnmarshalTypeError) string {
	switch te.Type.Kind() {
	case reflect.String:
		return "must be a JSON string, not " + te.Value
	case reflect.Int, reflect.Int64:
		return "must be a whole JSON number in range, not " + te.Value
	case reflect.Float64:
		return "must be a JSON number in range, not " + te.Value
	}
	return "must be a JSON " + te.Type.String() + ", not " + te.Value
}

// hasLoneSurrogate reports whether a valid JSON value has a \u escape of a
// UTF-16 surrogate that is not half of a pair.
func hasLoneSurrogate(raw []byte) bool {
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r := hexRune(raw[i+2:])
		i += 5 // at the escape's last hex digit
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r >= 0xDC00 {
			return true // a low half with no high half before it
		}
		if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
			return true
		}
		if lo := hexRune(raw[i+3:]); lo < 0xDC00 || lo > 0xDFFF {
			return true
		}
		i += 6
	}
	return false
}

// hexRune parses the 4 hex digits that start b, or returns -1.
func hexRune(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return rune(n)
}
