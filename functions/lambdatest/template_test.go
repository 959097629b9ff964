package lambdatest_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/functions/scheduler/schedule"
	"github.com/gbresearch/gb/functions/worker/work"
	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/httpapi"
)

// localOnly are the settings the code reads that template.yaml must not
// declare; docs/serverless.md says why.
var localOnly = []string{
	config.EnvOpenAIKey,    // a key belongs in Secrets Manager (OPENAI_SECRET_ARN)
	config.EnvOfflineDelay, // slows the offline policy down for demos and tests
}

// template is template.yaml with CloudFormation's short tags in their long
// form ({"Ref": x}, {"Fn::Sub": x}, ...), as CloudFormation reads them.
type template struct {
	root      string
	Globals   map[string]any
	Resources map[string]map[string]any
}

func loadTemplate(t *testing.T) *template {
	t.Helper()
	root := lambdatest.ModuleRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	m, ok := longForm(doc.Content[0]).(map[string]any)
	if !ok {
		t.Fatal("template.yaml is not a mapping")
	}
	tpl := &template{root: root, Resources: map[string]map[string]any{}}
	tpl.Globals, _ = m["Globals"].(map[string]any)
	res, _ := m["Resources"].(map[string]any)
	for name, r := range res {
		tpl.Resources[name], _ = r.(map[string]any)
	}
	return tpl
}

// longForm turns a YAML node into Go values, short tags into long forms.
func longForm(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = longForm(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		s := []any{}
		for _, c := range n.Content {
			s = append(s, longForm(c))
		}
		v = s
	case yaml.AliasNode:
		return longForm(n.Alias)
	default:
		v = n.Value
	}
	if tag, ok := strings.CutPrefix(n.Tag, "!"); ok && !strings.HasPrefix(tag, "!") {
		if tag == "Ref" {
			return map[string]any{"Ref": v}
		}
		if s, isStr := v.(string); isStr && tag == "GetAtt" {
			v = strings.SplitN(s, ".", 2)
		}
		return map[string]any{"Fn::" + tag: v}
	}
	return v
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func (tpl *template) functions() map[string]map[string]any {
	out := map[string]map[string]any{}
	for name, r := range tpl.Resources {
		if r["Type"] == "AWS::Serverless::Function" {
			out[name] = r
		}
	}
	return out
}

func TestTemplateFunctionsAreMainPackages(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	fns := tpl.functions()
	if len(fns) != 4 {
		t.Fatalf("%d functions, want api, worker, scheduler and migrate", len(fns))
	}
	g := dig(tpl.Globals, "Function").(map[string]any)
	if g["Runtime"] != "provided.al2023" || g["Handler"] != "bootstrap" || !slices.Equal(toStrings(g["Architectures"]), []string{"arm64"}) {
		t.Errorf("globals: runtime %v handler %v architectures %v", g["Runtime"], g["Handler"], g["Architectures"])
	}
	for name, fn := range fns {
		if dig(fn, "Metadata", "BuildMethod") != "go1.x" {
			t.Errorf("%s: Metadata.BuildMethod is %v, want go1.x", name, dig(fn, "Metadata", "BuildMethod"))
		}
		uri, _ := dig(fn, "Properties", "CodeUri").(string)
		if uri == "" {
			t.Errorf("%s: no CodeUri", name)
			continue
		}
		if err := mainPackage(filepath.Join(tpl.root, uri)); err != nil {
			t.Errorf("%s: CodeUri %s: %v", name, uri, err)
		}
	}
}

// mainPackage checks that dir holds a Go main package with a main func.
func mainPackage(dir string) error {
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return err
	}
	pkg, ok := pkgs["main"]
	if !ok || len(pkgs) != 1 {
		return fmt.Errorf("not a main package (found %d packages)", len(pkgs))
	}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
				return nil
			}
		}
	}
	return fmt.Errorf("package main has no func main")
}

func TestTemplateRoutesMatchTheAPI(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	want := map[string]bool{}
	for _, r := range httpapi.Routes {
		want[r.Method+" "+r.Path] = true
	}
	got := map[string]string{}
	for name, fn := range tpl.functions() {
		events, _ := dig(fn, "Properties", "Events").(map[string]any)
		for ev, e := range events {
			if dig(e, "Type") != "HttpApi" {
				continue
			}
			if name != "ApiFunction" {
				t.Errorf("%s.%s: HTTP events belong to ApiFunction", name, ev)
			}
			key := fmt.Sprint(dig(e, "Properties", "Method")) + " " + fmt.Sprint(dig(e, "Properties", "Path"))
			if prev, dup := got[key]; dup {
				t.Errorf("%s and %s both route %s", prev, ev, key)
			}
			got[key] = ev
			if !want[key] {
				t.Errorf("event %s routes %s, which the API does not serve", ev, key)
			}
		}
	}
	for key := range want {
		if _, ok := got[key]; !ok {
			t.Errorf("route %s of httpapi.Routes has no HttpApi event", key)
		}
	}
}

// envConstants parses infra/config/config.go for its Env* string constants:
// the settings the code reads.
func envConstants(t *testing.T, root string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "infra", "config", "config.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Env") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[v] = n.Name
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d Env constants in config.go: %v", len(out), out)
	}
	return out
}

func TestTemplateDeclaresEverySetting(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	read := envConstants(t, tpl.root)
	declared := map[string][]string{}
	add := func(where string, vars any) {
		m, _ := vars.(map[string]any)
		for k := range m {
			declared[k] = append(declared[k], where)
		}
	}
	add("Globals", dig(tpl.Globals, "Function", "Environment", "Variables"))
	for name, fn := range tpl.functions() {
		add(name, dig(fn, "Properties", "Environment", "Variables"))
	}
	doc, err := os.ReadFile(filepath.Join(tpl.root, "docs", "serverless.md"))
	if err != nil {
		t.Fatal(err)
	}
	for v, constName := range read {
		switch {
		case slices.Contains(localOnly, v):
			if len(declared[v]) > 0 {
				t.Errorf("%s (config.%s) is local-only but declared in %v", v, constName, declared[v])
			}
			if !strings.Contains(string(doc), "`"+v+"`") {
				t.Errorf("%s (config.%s) is local-only; docs/serverless.md should say so", v, constName)
			}
		case len(declared[v]) == 0:
			t.Errorf("%s (config.%s) is read by the code but declared neither in Globals nor in a function's Environment", v, constName)
		}
	}
	for v, where := range declared {
		if _, ok := read[v]; !ok {
			t.Errorf("%s, declared in %v, is read by no code", v, where)
		}
	}
	if w := declared[config.EnvWorkerFunction]; !sameSet(w, []string{"ApiFunction", "WorkerFunction"}) {
		t.Errorf("%s is declared in %v; only the API and the worker kick the worker", config.EnvWorkerFunction, w)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// statements returns every IAM statement in a function's policies,
// whichever branch of a condition it is in.
func statements(v any) []map[string]any {
	var out []map[string]any
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["Action"]; ok {
			return []map[string]any{x}
		}
		for _, c := range x {
			out = append(out, statements(c)...)
		}
	case []any:
		for _, c := range x {
			out = append(out, statements(c)...)
		}
	}
	return out
}

func toStrings(v any) []string {
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

func TestTemplateLeastPrivilege(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	workerARN := map[string]any{"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${AWS::StackName}-worker"}
	modelKey := map[string]any{"Ref": "OpenAISecretArn"}
	dbSecret := map[string]any{"Ref": "DatabaseSecretArn"}
	for name, fn := range tpl.functions() {
		if dig(fn, "Properties", "Role") != nil {
			t.Errorf("%s: a Role of its own escapes these checks", name)
		}
		invokes, readsKey := false, false
		for _, st := range statements(dig(fn, "Properties", "Policies")) {
			if st["Effect"] != "Allow" {
				continue
			}
			for _, action := range toStrings(st["Action"]) {
				switch {
				case strings.Contains(action, "*"):
					t.Errorf("%s: wildcard action %s", name, action)
				case action == "lambda:InvokeFunction":
					invokes = true
					if !jsonEqual(st["Resource"], workerARN) {
						t.Errorf("%s: lambda:InvokeFunction on %v, want the worker's ARN only", name, st["Resource"])
					}
				case action == "secretsmanager:GetSecretValue":
					switch {
					case jsonEqual(st["Resource"], modelKey):
						readsKey = true
					case !jsonEqual(st["Resource"], dbSecret):
						t.Errorf("%s: secretsmanager:GetSecretValue on %v", name, st["Resource"])
					}
				}
			}
		}
		if invokes != (name == "ApiFunction" || name == "WorkerFunction") {
			t.Errorf("%s: may invoke the worker: %v", name, invokes)
		}
		if readsKey != (name == "WorkerFunction") {
			t.Errorf("%s: may read the model key: %v; only the worker calls the model", name, readsKey)
		}
	}
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestTemplateEventsDecode(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	worker := tpl.Resources["WorkerFunction"]
	if dig(worker, "Properties", "Timeout") == nil || dig(worker, "Properties", "ReservedConcurrentExecutions") == nil {
		t.Error("the worker needs a Timeout and a ReservedConcurrentExecutions")
	}
	sweep := dig(worker, "Properties", "Events", "Sweep")
	if dig(sweep, "Type") != "Schedule" || !jsonEqual(dig(sweep, "Properties", "Schedule"), map[string]any{"Ref": "SweepSchedule"}) {
		t.Fatalf("worker sweep event: %v", sweep)
	}
	var ev work.Event
	if err := json.Unmarshal([]byte(fmt.Sprint(dig(sweep, "Properties", "Input"))), &ev); err != nil || ev.Source != gbaws.SourceSweep {
		t.Errorf("sweep input %v: %+v, %v", dig(sweep, "Properties", "Input"), ev, err)
	}

	found := false
	events, _ := dig(tpl.Resources["SchedulerFunction"], "Properties", "Events").(map[string]any)
	for name, e := range events {
		if dig(e, "Type") != "ScheduleV2" {
			continue
		}
		found = true
		if dig(e, "Properties", "OmitName") != "true" {
			t.Errorf("%s: OmitName should be true", name)
		}
		// The scheduler fills the context attributes at each delivery.
		input := strings.NewReplacer(
			"<aws.scheduler.schedule-arn>", "arn:aws:scheduler:eu-west-1:123456789012:schedule/default/example",
			"<aws.scheduler.scheduled-time>", "2026-11-30T06:00:00Z",
		).Replace(fmt.Sprint(dig(e, "Properties", "Input")))
		if _, err := schedule.Decode([]byte(input)); err != nil {
			t.Errorf("%s: its Input is not a valid scheduled research: %v\n%s", name, err, input)
		}
	}
	if !found {
		t.Error("the scheduler has no ScheduleV2 event example")
	}
}

// TestTemplateIsValidSAM runs the shared SAM schema check when the shared
// tools are beside the project.
func TestTemplateIsValidSAM(t *testing.T) {
	t.Parallel()
	root := lambdatest.ModuleRoot(t)
	tool := filepath.Join(root, "..", "shared", "tools", "validate-sam-template")
	if _, err := os.Stat(tool); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI lays shared/ beside the project, but %s is missing", tool)
		}
		t.Skip("shared/tools/validate-sam-template is not beside the project")
	}
	cmd := exec.Command(tool, "template.yaml")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("validate-sam-template: %v\n%s", err, out)
	}
}
