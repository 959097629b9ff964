package lambdatest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Template returns the module's template.yaml as Go values, its
// CloudFormation short tags in their long form ({"Ref": x},
// {"Condition": x}, {"Fn::Sub": x}, ...), as CloudFormation reads them.
func Template(t testing.TB) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ModuleRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	m, ok := LongForm(doc.Content[0]).(map[string]any)
	if !ok {
		t.Fatal("template.yaml is not a mapping")
	}
	return m
}

// LongForm turns a YAML node into Go values (maps, slices and strings),
// short tags into long forms: !Ref and !Condition keep their names, the
// others become Fn::<tag>, and !GetAtt "a.b" becomes the list [a, b].
func LongForm(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = LongForm(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		s := []any{}
		for _, c := range n.Content {
			s = append(s, LongForm(c))
		}
		v = s
	case yaml.AliasNode:
		return LongForm(n.Alias)
	default:
		v = n.Value
	}
	if tag, ok := strings.CutPrefix(n.Tag, "!"); ok && !strings.HasPrefix(tag, "!") {
		if tag == "Ref" || tag == "Condition" {
			return map[string]any{tag: v}
		}
		if s, isStr := v.(string); isStr && tag == "GetAtt" {
			v = strings.SplitN(s, ".", 2)
		}
		return map[string]any{"Fn::" + tag: v}
	}
	return v
}

// Dig returns the value at path in nested maps, or nil where a step of
// it is missing or not a map.
func Dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// Statements returns every IAM statement (a map with an Action) in v,
// whichever branch of a condition it is in.
func Statements(v any) []map[string]any {
	var out []map[string]any
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["Action"]; ok {
			return []map[string]any{x}
		}
		for _, c := range x {
			out = append(out, Statements(c)...)
		}
	case []any:
		for _, c := range x {
			out = append(out, Statements(c)...)
		}
	}
	return out
}

// ToStrings returns a string as a list of one, and a list's elements as
// strings; anything else is nil.
func ToStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}
