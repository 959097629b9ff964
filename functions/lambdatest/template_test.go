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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/functions/scheduler/schedule"
	"github.com/gbresearch/gb/functions/worker/work"
	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/dashboard"
	"github.com/gbresearch/gb/infra/fetch"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/search"
)

// localOnly are the settings the code reads that template.yaml must not
// declare; docs/serverless.md says why.
var localOnly = []string{
	config.EnvOpenAIKey,    // a key belongs in Secrets Manager (OPENAI_SECRET_ARN)
	config.EnvOfflineDelay, // slows the offline policy down for demos and tests
	search.EnvAPIKey,       // a key belongs in Secrets Manager (GB_SEARCH_SECRET_ARN)
	fetch.EnvAllow,         // lets fetch reach private networks: tests and local development
	fetch.EnvPorts,         // likewise for ports
}

// settingFiles hold the Env* constants of the settings the code reads.
var settingFiles = []string{"infra/config/config.go", "infra/search/config.go", "infra/fetch/allow.go"}

// template is template.yaml with CloudFormation's short tags in their long
// form ({"Ref": x}, {"Fn::Sub": x}, ...), as CloudFormation reads them.
type template struct {
	root       string
	Parameters map[string]any
	Mappings   map[string]any
	Conditions map[string]any
	Globals    map[string]any
	Resources  map[string]map[string]any
	Outputs    map[string]any
}

func loadTemplate(t *testing.T) *template {
	t.Helper()
	m := lambdatest.Template(t)
	tpl := &template{root: lambdatest.ModuleRoot(t), Resources: map[string]map[string]any{}}
	tpl.Globals, _ = m["Globals"].(map[string]any)
	tpl.Parameters, _ = m["Parameters"].(map[string]any)
	tpl.Mappings, _ = m["Mappings"].(map[string]any)
	tpl.Conditions, _ = m["Conditions"].(map[string]any)
	tpl.Outputs, _ = m["Outputs"].(map[string]any)
	res, _ := m["Resources"].(map[string]any)
	for name, r := range res {
		tpl.Resources[name], _ = r.(map[string]any)
	}
	return tpl
}

// The template's helpers, shared with the other tests of template.yaml.
var (
	dig        = lambdatest.Dig
	statements = lambdatest.Statements
	toStrings  = lambdatest.ToStrings
)

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
		// The makefile method with the whole module as CodeUri: a container
		// build mounts CodeUri (go.mod must be in it) and --cached hashes it
		// (a change anywhere in the module must rebuild).
		if dig(fn, "Metadata", "BuildMethod") != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod is %v, want makefile", name, dig(fn, "Metadata", "BuildMethod"))
		}
		if uri := dig(fn, "Properties", "CodeUri"); uri != "." {
			t.Errorf("%s: CodeUri is %v, want . (the module root, with go.mod and the Makefile)", name, uri)
		}
		pkg, err := makeTargetPackage(tpl.root, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := mainPackage(filepath.Join(tpl.root, pkg)); err != nil {
			t.Errorf("%s: target build-%s builds %s: %v", name, name, pkg, err)
		}
	}
}

// makeTargetPackage returns the package the Makefile's build-<name> target
// builds, from what make would run (make -n) as SAM calls it.
func makeTargetPackage(root, name string) (string, error) {
	cmd := exec.Command("make", "-n", "--makefile", filepath.Join(root, "Makefile"), "build-"+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "ARTIFACTS_DIR=/artifacts")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("the Makefile has no target build-%s: %v\n%s", name, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, " go build ") {
			continue
		}
		for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "-trimpath", "-tags lambda.norpc", `-o "/artifacts/bootstrap"`} {
			if !strings.Contains(line, want) {
				return "", fmt.Errorf("build-%s runs %q, without %s", name, line, want)
			}
		}
		f := strings.Fields(line)
		return f[len(f)-1], nil
	}
	return "", fmt.Errorf("build-%s runs no go build:\n%s", name, out)
}

// parseSources parses the Go files of dir but its tests, and returns them
// by the package they declare.
func parseSources(dir string) (map[string][]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		pkgs[f.Name.Name] = append(pkgs[f.Name.Name], f)
	}
	return pkgs, nil
}

// mainPackage checks that dir holds a Go main package with a main func.
func mainPackage(dir string) error {
	pkgs, err := parseSources(dir)
	if err != nil {
		return err
	}
	files, ok := pkgs["main"]
	if !ok || len(pkgs) != 1 {
		return fmt.Errorf("not a main package (found %d packages)", len(pkgs))
	}
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
				return nil
			}
		}
	}
	return fmt.Errorf("package main has no func main")
}

// TestTemplateRoutesMatchTheAPI: the HTTP API routes exactly what the API
// function serves, each route once: every list of routes of httpapi
// (Routes, KeyRoutes, PublicRoutes, and any list added later) as the
// function's HttpApi events, and the dashboard's GatewayRoutes in the
// API's DefinitionBody, under the ServesDashboard condition (the
// ServeDashboard parameter).
func TestTemplateRoutesMatchTheAPI(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	want := map[string]string{} // route → the condition it is under
	for _, list := range routeLists(t, tpl.root) {
		for _, r := range list {
			want[r.Method+" "+r.Path] = ""
		}
	}
	for _, r := range dashboard.GatewayRoutes {
		want[r[0]+" "+r[1]] = "ServesDashboard"
	}
	got := tpl.gatewayRoutes(t)
	for key, r := range got {
		cond, ok := want[key]
		switch {
		case !ok:
			t.Errorf("%s routes %s, which the API does not serve", r.source, key)
		case r.condition != cond:
			t.Errorf("%s routes %s under condition %q, want %q", r.source, key, r.condition, cond)
		}
	}
	for key := range want {
		if _, ok := got[key]; !ok {
			t.Errorf("the API serves %s, which the template does not route", key)
		}
	}
	if p := dig(tpl.Parameters, "ServeDashboard"); dig(p, "Default") != "true" || !sameSet(toStrings(dig(p, "AllowedValues")), []string{"true", "false"}) {
		t.Errorf("ServeDashboard parameter %v: want true or false, true by default", p)
	}
	if c := tpl.Conditions["ServesDashboard"]; !jsonEqual(c, map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "ServeDashboard"}, "true"}}) {
		t.Errorf("condition ServesDashboard is %v", c)
	}
}

// routeLists returns httpapi's package-level []Route variables by name,
// read from its source: the API's routes are the union of these lists, and
// a list added to the package is then checked without naming it here. The
// lists named here are checked against their values, which checks the
// reading too.
func routeLists(t *testing.T, root string) map[string][]httpapi.Route {
	t.Helper()
	dir := filepath.Join(root, "infra", "httpapi")
	pkgs, err := parseSources(dir)
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string][]httpapi.Route{}
	for _, f := range pkgs["httpapi"] {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if routes, ok := routeList(t, vs.Values[i]); ok {
							lists[name.Name] = routes
						}
					}
				}
			}
		}
	}
	for name, list := range map[string][]httpapi.Route{
		"Routes": httpapi.Routes, "KeyRoutes": httpapi.KeyRoutes, "PublicRoutes": httpapi.PublicRoutes,
	} {
		if !slices.Equal(lists[name], list) {
			t.Fatalf("read httpapi.%s as %v, but it is %v", name, lists[name], list)
		}
	}
	return lists
}

// routeList reads a []Route{{"GET", "/path"}, ...} literal.
func routeList(t *testing.T, e ast.Expr) ([]httpapi.Route, bool) {
	t.Helper()
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	arr, ok := lit.Type.(*ast.ArrayType)
	if !ok {
		return nil, false
	}
	if id, ok := arr.Elt.(*ast.Ident); !ok || id.Name != "Route" {
		return nil, false
	}
	var out []httpapi.Route
	for _, el := range lit.Elts {
		var parts []string
		if c, ok := el.(*ast.CompositeLit); ok {
			for _, v := range c.Elts {
				if kv, ok := v.(*ast.KeyValueExpr); ok {
					v = kv.Value
				}
				if b, ok := v.(*ast.BasicLit); ok && b.Kind == token.STRING {
					s, err := strconv.Unquote(b.Value)
					if err != nil {
						t.Fatal(err)
					}
					parts = append(parts, s)
				}
			}
		}
		if len(parts) != 2 {
			t.Fatalf("a route of httpapi is not two string literals: %#v", el)
		}
		out = append(out, httpapi.Route{Method: parts[0], Path: parts[1]})
	}
	return out, true
}

// gatewayRoute is where the template routes a "METHOD /path" to the API
// function, and the condition it is routed under ("" for always).
type gatewayRoute struct {
	source, condition string
}

// gatewayRoutes returns the routes of the HTTP API: the HttpApi events (of
// the API function only) and the methods of its DefinitionBody's paths,
// each integrated with the API function and, when conditional, invokable
// through a Lambda permission under the same condition.
func (tpl *template) gatewayRoutes(t *testing.T) map[string]gatewayRoute {
	t.Helper()
	got := map[string]gatewayRoute{}
	add := func(key string, r gatewayRoute) {
		if prev, dup := got[key]; dup {
			t.Errorf("%s and %s both route %s", prev.source, r.source, key)
		}
		got[key] = r
	}
	for name, fn := range tpl.functions() {
		events, _ := dig(fn, "Properties", "Events").(map[string]any)
		for ev, e := range events {
			if dig(e, "Type") != "HttpApi" {
				continue
			}
			if name != "ApiFunction" {
				t.Errorf("%s.%s: HTTP events belong to ApiFunction", name, ev)
			}
			if !jsonEqual(dig(e, "Properties", "ApiId"), map[string]any{"Ref": "HttpApi"}) {
				t.Errorf("%s.%s: ApiId %v, want the HttpApi", name, ev, dig(e, "Properties", "ApiId"))
			}
			add(fmt.Sprint(dig(e, "Properties", "Method"))+" "+fmt.Sprint(dig(e, "Properties", "Path")), gatewayRoute{source: "event " + ev})
		}
	}
	// The alias CodeDeploy moves traffic on, as SAM points the events' own
	// integrations at it.
	invoke := map[string]any{"Fn::Sub": "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${ApiFunction.Alias}/invocations"}
	paths, _ := dig(tpl.Resources["HttpApi"], "Properties", "DefinitionBody", "paths").(map[string]any)
	for path, item := range paths {
		methods, _ := item.(map[string]any)
		for method, def := range methods {
			key := strings.ToUpper(method) + " " + path
			r := gatewayRoute{source: "DefinitionBody " + key}
			if branches, ok := dig(def, "Fn::If").([]any); ok && len(branches) == 3 {
				r.condition = fmt.Sprint(branches[0])
				def = branches[1]
				if !jsonEqual(branches[2], map[string]any{"Ref": "AWS::NoValue"}) {
					t.Errorf("%s: a condition's other branch must be no route, not %v", key, branches[2])
				}
			}
			integ := dig(def, "x-amazon-apigateway-integration")
			if dig(integ, "type") != "aws_proxy" || dig(integ, "payloadFormatVersion") != "2.0" || !jsonEqual(dig(integ, "uri"), invoke) {
				t.Errorf("%s: integration %v, want the API function's, payload 2.0", key, integ)
			}
			if !tpl.mayInvokeAPI(strings.ToUpper(method), path, r.condition) {
				t.Errorf("%s: no Lambda permission (under condition %q) lets API Gateway invoke the API function for it", key, r.condition)
			}
			add(key, r)
		}
	}
	return got
}

// pathParam matches the path parameters of a route, greedy or not.
var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// mayInvokeAPI says whether an AWS::Lambda::Permission, under condition,
// lets API Gateway invoke the API function for method and path, as SAM's
// own permissions of HttpApi events do (any stage, parameters as *).
func (tpl *template) mayInvokeAPI(method, path, condition string) bool {
	arn := map[string]any{"Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpApi}/*/" +
		method + pathParam.ReplaceAllString(path, "*")}
	for _, r := range tpl.Resources {
		if r["Type"] != "AWS::Lambda::Permission" || fmt.Sprint(r["Condition"]) != condition && !(condition == "" && r["Condition"] == nil) {
			continue
		}
		p := dig(r, "Properties")
		if dig(p, "Action") == "lambda:InvokeFunction" && dig(p, "Principal") == "apigateway.amazonaws.com" &&
			jsonEqual(dig(p, "FunctionName"), map[string]any{"Ref": "ApiFunction.Alias"}) && jsonEqual(dig(p, "SourceArn"), arn) {
			return true
		}
	}
	return false
}

// envConstants parses settingFiles for their Env* string constants: the
// settings the code reads.
func envConstants(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range settingFiles {
		envConstantsOf(t, filepath.Join(root, filepath.FromSlash(name)), out)
	}
	if len(out) < 10 {
		t.Fatalf("found only %d Env constants in %v: %v", len(out), settingFiles, out)
	}
	return out
}

func envConstantsOf(t *testing.T, path string, out map[string]string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
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
	observability, err := os.ReadFile(filepath.Join(tpl.root, "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	for v, where := range declared {
		if otelSetting(v) {
			if !strings.Contains(string(observability), "`"+v) {
				t.Errorf("%s, declared in %v, is not in docs/observability.md", v, where)
			}
			continue
		}
		if _, ok := read[v]; !ok {
			t.Errorf("%s, declared in %v, is read by no code", v, where)
		}
	}
	if w := declared[config.EnvWorkerFunction]; !sameSet(w, []string{"ApiFunction", "WorkerFunction"}) {
		t.Errorf("%s is declared in %v; only the API and the worker kick the worker", config.EnvWorkerFunction, w)
	}
}

// otelSetting says whether v is read by the OpenTelemetry SDK or the ADOT
// collector layer (docs/observability.md) rather than by gb's settings.
func otelSetting(v string) bool {
	return strings.HasPrefix(v, "OTEL_") || strings.HasPrefix(v, "OPENTELEMETRY_")
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestTemplateLeastPrivilege(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	workerARN := map[string]any{"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${AWS::StackName}-worker:live"}
	hookARN := map[string]any{"Fn::Sub": "arn:${AWS::Partition}:codedeploy:${AWS::Region}:${AWS::AccountId}:deploymentgroup:${ServerlessDeploymentApplication}/*"}
	modelKey := map[string]any{"Ref": "OpenAISecretArn"}
	searchKey := map[string]any{"Ref": "SearchSecretArn"}
	dbSecret := map[string]any{"Ref": "DatabaseSecretArn"}
	for name, fn := range tpl.functions() {
		if dig(fn, "Properties", "Role") != nil {
			t.Errorf("%s: a Role of its own escapes these checks", name)
		}
		invokes, readsKey, reportsHook := false, false, false
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
						t.Errorf("%s: lambda:InvokeFunction on %v, want the worker's alias only", name, st["Resource"])
					}
				case strings.HasPrefix(action, "codedeploy:"):
					reportsHook = true
					if action != "codedeploy:PutLifecycleEventHookExecutionStatus" || !jsonEqual(st["Resource"], hookARN) {
						t.Errorf("%s: %s on %v, want only a hook's report on this stack's deployment groups", name, action, st["Resource"])
					}
				case action == "secretsmanager:GetSecretValue":
					switch {
					case jsonEqual(st["Resource"], modelKey), jsonEqual(st["Resource"], searchKey):
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
		if reportsHook != (name == "MigrateFunction") {
			t.Errorf("%s: may report a CodeDeploy hook: %v; only the migrate function is the hook", name, reportsHook)
		}
		if readsKey != (name == "WorkerFunction") {
			t.Errorf("%s: may read the model or search key: %v; only the worker calls the model and the web", name, readsKey)
		}
	}
}

// mustJSON is v as JSON, for looking for a reference anywhere in it.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
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
	// Reserved concurrency is optional: WorkerConcurrency 0 reserves none.
	wantRC := map[string]any{"Fn::If": []any{"HasWorkerConcurrency", map[string]any{"Ref": "WorkerConcurrency"}, map[string]any{"Ref": "AWS::NoValue"}}}
	if dig(worker, "Properties", "Timeout") == nil || !jsonEqual(dig(worker, "Properties", "ReservedConcurrentExecutions"), wantRC) {
		t.Errorf("the worker needs a Timeout and an optional ReservedConcurrentExecutions, got %v", dig(worker, "Properties", "ReservedConcurrentExecutions"))
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

// TestTemplateLogLevel: Lambda's ApplicationLogLevel follows the LogLevel
// parameter for every level it allows, as GB_LOG_LEVEL does.
func TestTemplateLogLevel(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	lc := dig(tpl.Globals, "Function", "LoggingConfig")
	if dig(lc, "LogFormat") != "JSON" {
		t.Errorf("LogFormat %v, want JSON", dig(lc, "LogFormat"))
	}
	if want := map[string]any{"Fn::FindInMap": []any{"LogLevels", map[string]any{"Ref": "LogLevel"}, "Lambda"}}; !jsonEqual(dig(lc, "ApplicationLogLevel"), want) {
		t.Fatalf("ApplicationLogLevel is %v, want %v", dig(lc, "ApplicationLogLevel"), want)
	}
	if !jsonEqual(dig(tpl.Globals, "Function", "Environment", "Variables", config.EnvLogLevel), map[string]any{"Ref": "LogLevel"}) {
		t.Errorf("%s should be the LogLevel parameter", config.EnvLogLevel)
	}
	for _, level := range toStrings(dig(tpl.Parameters, "LogLevel", "AllowedValues")) {
		got := fmt.Sprint(dig(tpl.Mappings, "LogLevels", level, "Lambda"))
		if got != strings.ToUpper(level) {
			t.Errorf("LogLevel %s maps to ApplicationLogLevel %q", level, got)
		}
	}
	if len(toStrings(dig(tpl.Parameters, "LogLevel", "AllowedValues"))) != 4 {
		t.Error("LogLevel should allow debug, info, warn and error")
	}
}

// TestTemplateSchedulerKeepsFailures: the scheduler's asynchronous
// invocations are retried and what fails every attempt goes to a queue.
func TestTemplateSchedulerKeepsFailures(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	cfg := dig(tpl.Resources["SchedulerFunction"], "Properties", "EventInvokeConfig")
	if n := fmt.Sprint(dig(cfg, "MaximumRetryAttempts")); n != "2" {
		t.Errorf("MaximumRetryAttempts %s, want 2 (Lambda's most)", n)
	}
	onFailure := dig(cfg, "DestinationConfig", "OnFailure")
	if dig(onFailure, "Type") != "SQS" || !jsonEqual(dig(onFailure, "Destination"), map[string]any{"Fn::GetAtt": []any{"SchedulerFailures", "Arn"}}) {
		t.Fatalf("on-failure destination %v, want the SchedulerFailures queue", onFailure)
	}
	if q := tpl.Resources["SchedulerFailures"]; q["Type"] != "AWS::SQS::Queue" {
		t.Errorf("SchedulerFailures is %v, want an SQS queue", q["Type"])
	}
}

// TestTemplateKMSDecrypt: a customer-managed key may be used by the
// functions that read a secret, only through Secrets Manager.
func TestTemplateKMSDecrypt(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	via := map[string]any{"StringEquals": map[string]any{"kms:ViaService": map[string]any{"Fn::Sub": "secretsmanager.${AWS::Region}.amazonaws.com"}}}
	for name, fn := range tpl.functions() {
		readsSecret, decrypts := false, false
		for _, st := range statements(dig(fn, "Properties", "Policies")) {
			for _, action := range toStrings(st["Action"]) {
				switch action {
				case "secretsmanager:GetSecretValue":
					readsSecret = true
				case "kms:Decrypt":
					decrypts = true
					if !jsonEqual(st["Resource"], map[string]any{"Ref": "SecretsKmsKeyArn"}) || !jsonEqual(st["Condition"], via) {
						t.Errorf("%s: kms:Decrypt on %v with %v, want the key parameter through Secrets Manager", name, st["Resource"], st["Condition"])
					}
				}
			}
		}
		if readsSecret != decrypts {
			t.Errorf("%s: reads a secret %v, may decrypt %v", name, readsSecret, decrypts)
		}
	}
}

// TestTemplateSizesTheWorker: the worker's GB_MAX_WORKERS and GB_DB_POOL
// come from parameters whose default and bounds are those of infra/config,
// so a deploy refuses what the worker would refuse at start.
func TestTemplateSizesTheWorker(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	vars := dig(tpl.Resources["WorkerFunction"], "Properties", "Environment", "Variables")
	for _, tc := range []struct {
		env, param  string
		def, lo, hi int
	}{
		{config.EnvMaxWorkers, "MaxWorkers", config.MaxWorkersDefault, config.MaxWorkersMin, config.MaxWorkersMax},
		{config.EnvDBPool, "WorkerDatabasePool", config.DBPoolDefault, config.DBPoolMin, config.DBPoolMax},
	} {
		if got := dig(vars, tc.env); !jsonEqual(got, map[string]any{"Ref": tc.param}) {
			t.Errorf("the worker's %s is %v, want the %s parameter", tc.env, got, tc.param)
		}
		p := dig(tpl.Parameters, tc.param)
		want := map[string]any{"Type": "Number", "Default": strconv.Itoa(tc.def),
			"MinValue": strconv.Itoa(tc.lo), "MaxValue": strconv.Itoa(tc.hi)}
		for k, v := range want {
			if got := dig(p, k); got != v {
				t.Errorf("parameter %s: %s is %v, want %v (as %s in infra/config)", tc.param, k, got, v, tc.env)
			}
		}
	}
}
