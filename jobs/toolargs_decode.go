package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Decoding a tool's arguments: strict JSON, text Postgres can store, and
// the limits the argument struct declares (toolargs.go).

// decodeArgs reads a tool's JSON arguments into v, a pointer to the tool's
// argument struct, strictly, checks every string in them and applies the
// struct's declaration (toolargs.go): arguments that are not UTF-8, not
// JSON (a reply cut off by the completion limit), not one object, with an
// unknown field or a field of the wrong type, with a string Postgres
// cannot store, or outside a declared limit, are a toolError that says
// what was wrong and what was expected. No arguments at all are {}. The
// checks a declaration cannot say are the tool's own, after it.
func decodeArgs(raw json.RawMessage, v any) error {
	if err := unmarshalArgs(raw, v); err != nil {
		return toolErrorf("invalid arguments (%s); expected %s", err.Error(), argShape(reflect.TypeOf(v).Elem()))
	}
	if err := checkStrings(reflect.ValueOf(v), "arguments"); err != nil {
		return err
	}
	return checkFields(v)
}

// unmarshalArgs decodes raw into v: one JSON object in valid UTF-8, with
// no unknown field. The content of its strings is checkStrings' part.
func unmarshalArgs(raw []byte, v any) error {
	// encoding/json would quietly turn bytes that are not UTF-8 into U+FFFD.
	if !utf8.Valid(raw) {
		return fmt.Errorf("text must be valid UTF-8; the byte at offset %d is not", invalidUTF8At(raw))
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, new(json.RawMessage)); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if raw[0] != '{' {
		return errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// invalidUTF8At is the offset of the first byte of b that is not UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// checkStrings finds a string in v, decoded arguments, that Postgres could
// not store, and names its field in the toolError. A JSON \u0000 escape
// decodes to a NUL, which no text or jsonb column accepts.
func checkStrings(v reflect.Value, field string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return checkStrings(v.Elem(), field)
		}
	case reflect.String:
		if p := encodingProblem(v.String()); p != "" {
			return toolErrorf("%s %s", field, p)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := checkStrings(v.Index(i), field); err != nil {
				return err
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if err := checkStrings(it.Key(), field); err != nil {
				return err
			}
			if err := checkStrings(it.Value(), field); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				if err := checkStrings(v.Field(i), jsonName(f)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// jsonName is the name of a struct field in JSON.
func jsonName(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
		return name
	}
	return f.Name
}

// encodingProblem says why Postgres could not store s, or "" when it can.
func encodingProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain NUL characters"
	}
	return ""
}

// textProblem says what is wrong with s as a text of 1 to max characters
// (runes, not bytes) that Postgres can store, or "" when nothing is.
func textProblem(s string, max int) string {
	if p := encodingProblem(s); p != "" {
		return p
	}
	switch n := utf8.RuneCountInString(s); {
	case n == 0:
		return fmt.Sprintf("must be 1 to %d characters", max)
	case n > max:
		return fmt.Sprintf("is %d characters; at most %d are allowed", n, max)
	}
	return ""
}
