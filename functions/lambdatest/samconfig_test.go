package lambdatest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// samconfigExample is the example samconfig.toml of a first deploy.
const samconfigExample = "docs/samconfig.example.toml"

var (
	// overridesBlock is parameter_overrides as a TOML multi-line string.
	overridesBlock = regexp.MustCompile(`(?s)\nparameter_overrides = """(.*?)"""`)
	// lineContinuation is TOML's backslash at the end of a line in a
	// multi-line basic string: it drops the newline and the whitespace
	// that follows.
	lineContinuation = regexp.MustCompile(`\\[ \t]*\r?\n\s*`)
	// capabilities is the deploy's capabilities setting.
	capabilities = regexp.MustCompile(`\ncapabilities = "([^"]*)"`)
)

// TestSamconfigExample: the example samconfig.toml sets every parameter a
// deploy needs (those without a default), names no parameter the template
// lacks, gives each a value the template accepts, allows SAM to create
// the functions' roles, and docs/serverless.md points to it.
func TestSamconfigExample(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	b, err := os.ReadFile(filepath.Join(tpl.root, filepath.FromSlash(samconfigExample)))
	if err != nil {
		t.Fatal(err)
	}
	m := overridesBlock.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no parameter_overrides = \"\"\"...\"\"\"", samconfigExample)
	}
	set := map[string]string{}
	for _, kv := range strings.Fields(lineContinuation.ReplaceAllString(string(m[1]), "")) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			t.Errorf("override %q is not Key=Value", kv)
			continue
		}
		if _, dup := set[k]; dup {
			t.Errorf("%s is set twice", k)
		}
		set[k] = v
		p, ok := tpl.Parameters[k].(map[string]any)
		if !ok {
			t.Errorf("%s sets %s, which template.yaml does not declare", samconfigExample, k)
			continue
		}
		checkParameterValue(t, k, p, v)
	}
	for name, p := range tpl.Parameters {
		if _, hasDefault := p.(map[string]any)["Default"]; !hasDefault && set[name] == "" {
			t.Errorf("%s does not set %s, which has no default", samconfigExample, name)
		}
	}
	if c := capabilities.FindSubmatch(b); c == nil || !slices.Contains(strings.Fields(string(c[1])), "CAPABILITY_IAM") {
		t.Errorf("%s should set capabilities = \"CAPABILITY_IAM\": SAM creates the functions' roles", samconfigExample)
	}
	doc, err := os.ReadFile(filepath.Join(tpl.root, "docs", "serverless.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), samconfigExample) {
		t.Errorf("docs/serverless.md does not mention %s", samconfigExample)
	}
}

// checkParameterValue checks v against a parameter's AllowedValues, and a
// Number's bounds.
func checkParameterValue(t *testing.T, name string, p map[string]any, v string) {
	t.Helper()
	if allowed := toStrings(p["AllowedValues"]); allowed != nil && !slices.Contains(allowed, v) {
		t.Errorf("%s=%s is not one of %v", name, v, allowed)
	}
	if p["Type"] != "Number" {
		return
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Errorf("%s=%s is not a number", name, v)
		return
	}
	for bound, below := range map[string]bool{"MinValue": true, "MaxValue": false} {
		s, ok := p[bound].(string)
		if !ok {
			continue
		}
		if lim, err := strconv.ParseFloat(s, 64); err == nil && (below && n < lim || !below && n > lim) {
			t.Errorf("%s=%s is beyond its %s %s", name, v, bound, s)
		}
	}
}
