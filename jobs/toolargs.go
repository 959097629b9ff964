package jobs

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// A tool's arguments are declared once, as the Go struct they decode into.
// Each field's tags say all there is to know about it:
//
//	json:"query"       its name in JSON
//	desc:"keywords"    what it is, for the model
//	optional:"true"    it may be left out (every other field is required)
//	trim:"true"        surrounding white space is dropped before the checks
//	min:"1" max:"500"  characters of a string, the value of an integer,
//	                   the items of a list
//	default:"5"        the value of an integer left out or 0
//	check:"tool"       the tool checks the bounds itself, with a message
//	                   that says more (spawn_subagent's name)
//
// From the struct come the JSON schema of the tool's spec (argSchema),
// the shape its decoding errors show (argShape), and the checks of
// decodeArgs (checkFields) with messages that name the field and its
// limit. toolargs_test.go checks the README's tool table, and the
// constants the rest of the code holds to, against the declarations.

// argField is one declared field of a tool's arguments.
type argField struct {
	index    int
	name     string
	desc     string
	optional bool
	trim     bool
	// toolChecks is set when the tool checks the bounds itself.
	toolChecks bool
	// min, max and def are set when hasMin, hasMax and hasDef are.
	min, max, def          int
	hasMin, hasMax, hasDef bool
}

// argFieldCache holds the parsed declarations by struct type.
var argFieldCache sync.Map // reflect.Type -> []argField

// argFields parses the declaration of the struct type t. A malformed tag
// panics: declarations are code, and register parses each one at start.
func argFields(t reflect.Type) []argField {
	if fs, ok := argFieldCache.Load(t); ok {
		return fs.([]argField)
	}
	var fs []argField
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		f := argField{index: i, name: jsonName(sf), desc: sf.Tag.Get("desc"),
			optional: sf.Tag.Get("optional") == "true", trim: sf.Tag.Get("trim") == "true",
			toolChecks: sf.Tag.Get("check") == "tool"}
		f.min, f.hasMin = intTag(t, sf, "min")
		f.max, f.hasMax = intTag(t, sf, "max")
		f.def, f.hasDef = intTag(t, sf, "default")
		fs = append(fs, f)
	}
	argFieldCache.Store(t, fs)
	return fs
}

// intTag reads the integer tag key of a field, if it has one.
func intTag(t reflect.Type, sf reflect.StructField, key string) (int, bool) {
	s, ok := sf.Tag.Lookup(key)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("%s.%s: tag %s:%q is not an integer", t.Name(), sf.Name, key, s))
	}
	return n, true
}

// argSchema is the JSON schema of the argument struct type t: an object
// of its declared fields, which refuses any other.
func argSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, f := range argFields(t) {
		props[f.name] = fieldSchema(t.Field(f.index).Type, f)
		if !f.optional {
			required = append(required, f.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// fieldSchema is the JSON schema of one field of type t.
func fieldSchema(t reflect.Type, f argField) map[string]any {
	s := map[string]any{}
	lo, hi := "minimum", "maximum"
	switch t.Kind() {
	case reflect.String:
		s["type"], lo, hi = "string", "minLength", "maxLength"
	case reflect.Int, reflect.Int64:
		s["type"] = "integer"
		if f.hasDef {
			s["default"] = f.def
		}
	case reflect.Slice:
		s["type"], lo, hi = "array", "minItems", "maxItems"
		if e := t.Elem(); e.Kind() == reflect.Struct {
			s["items"] = argSchema(e)
		} else {
			s["items"] = fieldSchema(e, argField{})
		}
	default:
		panic(fmt.Sprintf("field %s: arguments of kind %s are not supported", f.name, t.Kind()))
	}
	if f.hasMin {
		s[lo] = f.min
	}
	if f.hasMax {
		s[hi] = f.max
	}
	if d := fieldDescription(t, f); d != "" {
		s["description"] = d
	}
	return s
}

// fieldDescription is a field's description, with the limit of a text
// and the default of an integer in words, which some models heed better
// than the schema's keywords.
func fieldDescription(t reflect.Type, f argField) string {
	var note string
	switch {
	case t.Kind() == reflect.String && f.hasMax:
		note = fmt.Sprintf("at most %d characters", f.max)
	case f.hasDef:
		note = fmt.Sprintf("default %d", f.def)
	}
	switch {
	case note == "":
		return f.desc
	case f.desc == "":
		return note
	}
	return f.desc + " (" + note + ")"
}

// argShape is the arguments of t as an example, for decoding errors:
// {"query": "...", "limit": 1..10}.
func argShape(t reflect.Type) string {
	fs := argFields(t)
	if len(fs) == 0 {
		return "{}"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("%q: %s", f.name, valueShape(t.Field(f.index).Type, f))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// valueShape is the example of one field's value in argShape.
func valueShape(t reflect.Type, f argField) string {
	switch t.Kind() {
	case reflect.String:
		return `"..."`
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "[" + argShape(t.Elem()) + ", ...]"
		}
		return "[" + valueShape(t.Elem(), argField{}) + ", ...]"
	}
	switch {
	case f.hasMin && f.hasMax:
		return fmt.Sprintf("%d..%d", f.min, f.max)
	case f.hasMin:
		return strconv.Itoa(f.min)
	}
	return "0"
}

// checkFields applies the declaration to v, a pointer to decoded
// arguments: it trims the texts that are trimmed, fills the defaults and
// checks every limit, as a toolError that names the field, what it got
// and what is allowed. It leaves the items of lists to their tool.
func checkFields(v any) error {
	rv := reflect.ValueOf(v).Elem()
	for _, f := range argFields(rv.Type()) {
		if err := checkField(rv.Field(f.index), f); err != nil {
			return err
		}
	}
	return nil
}

// checkField applies one field's declaration to its value fv.
func checkField(fv reflect.Value, f argField) error {
	switch fv.Kind() {
	case reflect.String:
		if f.trim {
			fv.SetString(strings.TrimSpace(fv.String()))
		}
		if f.toolChecks {
			return nil
		}
		return checkLength(f, fv.String())
	case reflect.Int, reflect.Int64:
		if fv.Int() == 0 && f.hasDef {
			fv.SetInt(int64(f.def))
		}
		return checkRange(f, int(fv.Int()))
	case reflect.Slice:
		if n := fv.Len(); (f.hasMin && n < f.min) || (f.hasMax && n > f.max) {
			return toolErrorf("%s must list %d to %d items (got %d)", f.name, f.min, f.max, n)
		}
	}
	return nil
}

// checkLength checks a text's length in characters (runes) against the
// declared bounds, with a message that names the field and its limits.
func checkLength(f argField, s string) error {
	n := utf8.RuneCountInString(s)
	switch {
	case f.hasMax && n > f.max:
		return toolErrorf("%s is %d characters; at most %d are allowed", f.name, n, f.max)
	case f.hasMin && n < f.min && f.hasMax:
		return toolErrorf("%s must be %d to %d characters", f.name, f.min, f.max)
	case f.hasMin && n < f.min:
		return toolErrorf("%s must be at least %d characters", f.name, f.min)
	}
	return nil
}

// checkRange checks an integer against the declared bounds.
func checkRange(f argField, n int) error {
	switch {
	case f.hasMin && f.hasMax && (n < f.min || n > f.max):
		return toolErrorf("%s must be %d to %d (got %d)", f.name, f.min, f.max, n)
	case f.hasMin && n < f.min:
		return toolErrorf("%s must be %d or more (got %d)", f.name, f.min, n)
	case f.hasMax && n > f.max:
		return toolErrorf("%s must be at most %d (got %d)", f.name, f.max, n)
	}
	return nil
}
