package schedule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs"
)

// Limits of an event. Beyond them an event can never start a research, so
// it is refused before it is decoded (MaxDepth) or reaches the database.
const (
	// MaxDepth bounds how deep the event's JSON nests. The event is one
	// flat object (depth 1); deeper values are refused by their field's
	// type, and this bound keeps a hostile event from costing more.
	MaxDepth = 16
	// MaxScheduleLen bounds the schedule field: 2048 characters, the
	// longest ARN AWS allows. It keeps the idempotency key within what a
	// Postgres index row can hold.
	MaxScheduleLen = 2048
)

// userName is what a user's name may be: the CHECK of gb_users.name
// (migrations/001_users.sql). No other name can belong to a user.
var userName = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

// Decode reads an Input strictly: valid UTF-8 holding one JSON object nested at most MaxDepth deep, no unknown field
// (names match exactly, not case-insensitively), each field of its type,
// the required ones present and each within its limits. It normalizes
// ScheduledTime to UTC in RFC 3339 with no trailing fractional zeros, so
// that every spelling of an instant makes the same Key.
func Decode(raw []byte) (Input, error) {
	var in Input
	if err := checkShape(raw); err != nil {
		return in, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return in, &InputError{Msg: "the event has data after its JSON object"}
	}
	if err := checkKeys(raw); err != nil {
		return in, err
	}
	in.User = strings.TrimSpace(in.User)
	if err := in.check(); err != nil {
		return in, err
	}
	in.ScheduledTime = normalTime(in.ScheduledTime)
	return in, nil
}

// checkShape refuses what is not worth decoding: an event that is not
// UTF-8, empty, null, or nested too deep. (Lambda bounds an event's size.)
func checkShape(raw []byte) error {
	body := bytes.TrimSpace(raw)
	switch {
	case !utf8.Valid(raw):
		return &InputError{Msg: "the event is not valid UTF-8"}
	case len(body) == 0:
		return &InputError{Msg: "the event is empty; a scheduled research is a JSON object with the fields " + allowedFields}
	case string(body) == "null":
		return &InputError{Msg: "the event is not a JSON object but JSON null"}
	}
	if depth(body) > MaxDepth {
		return &InputError{Msg: fmt.Sprintf("the event's JSON nests more than %d levels deep; a scheduled research is one flat JSON object", MaxDepth)}
	}
	return nil
}

// depth returns how deep b's JSON arrays and objects nest, counting only
// brackets outside strings. It stops counting past MaxDepth.
func depth(b []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			if deepest = max(deepest, d); deepest > MaxDepth {
				return deepest
			}
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// decodeError explains an error of json.Decoder.Decode.
func decodeError(err error) *InputError {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return &InputError{Msg: "the event is not a JSON object but a JSON " + te.Value}
	case errors.As(err, &te):
		return &InputError{Field: te.Field, Msg: fmt.Sprintf("must be a JSON %s, not %s", jsonKind(te.Type.Kind().String()), te.Value)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &InputError{Field: f, Msg: "is not a field of a scheduled research; allowed: " + allowedFields}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &InputError{Msg: "the event's JSON ends before its object does (truncated?)"}
	case errors.As(err, &se):
		return &InputError{Msg: fmt.Sprintf("the event is not valid JSON: %s (at byte %d)", se.Error(), se.Offset)}
	default:
		return &InputError{Msg: "the event is not a JSON object: " + err.Error()}
	}
}

// checkKeys refuses a key that matched a field only case-insensitively, as
// encoding/json allows: {"TOPIC": ...} is not the topic.
func checkKeys(raw []byte) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return &InputError{Msg: "the event is not a JSON object: " + err.Error()}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Contains(fields, k) {
			return &InputError{Field: k, Msg: "is not a field of a scheduled research (names are case-sensitive); allowed: " + allowedFields}
		}
	}
	return nil
}

// check refuses missing, malformed and oversized fields: a name no user can
// have, a schedule that is not 1 to MaxScheduleLen printable ASCII
// characters (NULs and other control characters would fail every query,
// as if worth a retry), a time that is not RFC 3339. The research's own
// fields (topic, dataset, budgets) are jobs.StartParams.Validate's.
func (in Input) check() error {
	switch {
	case in.User == "":
		return &InputError{Field: "user", Msg: "is required: the name of the user who owns the research"}
	case in.Schedule == "":
		return &InputError{Field: "schedule", Msg: "is required: the schedule's ARN, <aws.scheduler.schedule-arn> in the schedule's Input"}
	case in.ScheduledTime == "":
		return &InputError{Field: "scheduled_time", Msg: "is required: <aws.scheduler.scheduled-time> in the schedule's Input"}
	case strings.ContainsRune(in.User, 0):
		return &InputError{Field: "user", Msg: "must not contain NUL characters"}
	case !userName.MatchString(in.User):
		return &InputError{Field: "user", Msg: fmt.Sprintf("%q cannot be a user's name: names are 1 to 64 letters, digits, '.', '_', '@' or '-'",
			clip(in.User, 80))}
	case len(in.Schedule) > MaxScheduleLen:
		return &InputError{Field: "schedule", Msg: fmt.Sprintf("is %d bytes long; it may have at most %d characters, the most AWS allows in an ARN",
			len(in.Schedule), MaxScheduleLen)}
	case strings.IndexFunc(in.Schedule, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0:
		return &InputError{Field: "schedule", Msg: "must be printable ASCII characters without spaces, such as the schedule's ARN"}
	case in.MaxSteps != nil && *in.MaxSteps == 0:
		return &InputError{Field: "max_steps", Msg: fmt.Sprintf("must be between 1 and %d (got 0); leave it out for the default %d",
			jobs.MaxMaxSteps, jobs.DefaultMaxSteps)}
	}
	if _, err := time.Parse(time.RFC3339, in.ScheduledTime); err != nil {
		return &InputError{Field: "scheduled_time", Msg: fmt.Sprintf("%q is not an RFC 3339 time like 2026-01-02T15:04:05Z",
			clip(in.ScheduledTime, 80))}
	}
	return nil
}

// normalTime writes an RFC 3339 time (check has parsed it) as UTC with no
// trailing fractional zeros: 2026-12-02T03:00:00+00:00,
// 2026-12-02T04:00:00.000+01:00 and 2026-12-02T03:00:00Z are all
// 2026-12-02T03:00:00Z.
func normalTime(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return s
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// clip shortens s to at most n bytes (on a rune boundary) for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	}
	return goKind
}
