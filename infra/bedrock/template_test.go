package bedrock_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gbresearch/gb/functions/lambdatest"
)

// The worker's role may invoke exactly the configured Bedrock models, and
// no function may invoke any when the provider is openai: template.yaml's
// policies, resolved as CloudFormation would for given parameters.
func TestWorkerRoleNamesOnlyTheConfiguredModels(t *testing.T) {
	t.Parallel()
	const account, stackRegion = "123456789012", "eu-west-1"
	fm := func(id string) string { return "arn:aws:bedrock:*::foundation-model/" + id }
	ip := func(region, id string) string {
		return "arn:aws:bedrock:" + region + ":" + account + ":inference-profile/" + id
	}
	haiku, haikuUS, nova := "anthropic.claude-3-5-haiku-20241022-v1:0", "us.anthropic.claude-3-5-haiku-20241022-v1:0", "amazon.nova-lite-v1:0"
	five := []string{nova, "amazon.nova-micro-v1:0", "amazon.nova-pro-v1:0", "meta.llama3-1-8b-instruct-v1:0", haiku}
	for _, tc := range []struct {
		name       string
		params     map[string]string
		want       []string // the worker's Bedrock resources; nil: no Bedrock statement at all
		wantModels string
		wantRegion string
	}{
		{"a profile and a foundation model", map[string]string{"ModelProvider": "bedrock",
			"BedrockModelIds": haikuUS + "," + nova, "BedrockFoundationModelIds": haiku},
			[]string{fm(haikuUS), fm(nova), ip(stackRegion, haikuUS), ip(stackRegion, nova), fm(haiku)},
			haikuUS + "," + nova, stackRegion},
		{"five models in another Region", map[string]string{"ModelProvider": "bedrock",
			"BedrockModelIds": strings.Join(five, ","), "BedrockRegion": "us-west-2"},
			append(mapped(five, fm), mapped(five, func(id string) string { return ip("us-west-2", id) })...),
			strings.Join(five, ","), "us-west-2"},
		{"the default model", map[string]string{"ModelProvider": "bedrock"},
			[]string{fm(nova), ip(stackRegion, nova)}, nova, stackRegion},
		{"openai", map[string]string{"ModelProvider": "openai", "Models": "gpt-4o-mini"}, nil, "gpt-4o-mini", stackRegion},
	} {
		tpl := loadTemplate(t, tc.params, map[string]any{"AWS::Partition": "aws", "AWS::Region": stackRegion,
			"AWS::AccountId": account, "AWS::StackName": "gb"})
		got, found := []string(nil), false
		for name, fn := range tpl.functions() {
			for _, st := range statements(tpl.eval(dig(fn, "Properties", "Policies"))) {
				actions := strings.Join(toStrings(st["Action"]), ",")
				if !strings.Contains(actions, "bedrock:") {
					continue
				}
				if name != "WorkerFunction" {
					t.Errorf("%s: %s may call Bedrock (%s)", tc.name, name, actions)
					continue
				}
				if actions != "bedrock:InvokeModel" || st["Effect"] != "Allow" {
					t.Errorf("%s: the worker may %s (%v), want bedrock:InvokeModel alone", tc.name, actions, st["Effect"])
				}
				found = true
				got = append(got, toStrings(st["Resource"])...)
			}
		}
		if tc.want == nil {
			if found {
				t.Errorf("%s: the worker may call Bedrock: %v", tc.name, got)
			}
		} else if g, w := distinct(got), distinct(tc.want); !slices.Equal(g, w) {
			t.Errorf("%s: the worker may invoke\n  %s\nwant\n  %s", tc.name, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
		}
		globals := tpl.eval(dig(tpl.doc, "Globals", "Function", "Environment", "Variables"))
		worker := tpl.eval(dig(tpl.doc, "Resources", "WorkerFunction", "Properties", "Environment", "Variables"))
		if m := dig(globals, "GB_MODELS"); m != tc.wantModels || dig(globals, "GB_MODEL_PROVIDER") != tc.params["ModelProvider"] {
			t.Errorf("%s: GB_MODELS %v, GB_MODEL_PROVIDER %v", tc.name, m, dig(globals, "GB_MODEL_PROVIDER"))
		}
		if r := dig(worker, "GB_BEDROCK_REGION"); r != tc.wantRegion {
			t.Errorf("%s: GB_BEDROCK_REGION %v, want %s", tc.name, r, tc.wantRegion)
		}
	}
}

func mapped(ids []string, f func(string) string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = f(id)
	}
	return out
}

func distinct(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// template is template.yaml with its short tags in long form, and the
// values its parameters, pseudo parameters and conditions take.
type template struct {
	doc        map[string]any
	params     map[string]any
	conditions map[string]bool
}

// noValue is AWS::NoValue: an element or a property left out.
type noValue struct{}

func loadTemplate(t *testing.T, params map[string]string, pseudo map[string]any) *template {
	t.Helper()
	tpl := &template{doc: lambdatest.Template(t), params: pseudo, conditions: map[string]bool{}}
	tpl.params["AWS::NoValue"] = noValue{}
	for name, p := range dig(tpl.doc, "Parameters").(map[string]any) {
		v, ok := params[name]
		if !ok {
			v = fmt.Sprint(dig(p, "Default"))
		}
		if dig(p, "Type") == "CommaDelimitedList" {
			var list []any
			for _, s := range strings.Split(v, ",") {
				list = append(list, s)
			}
			tpl.params[name] = list
			continue
		}
		tpl.params[name] = v
	}
	for name, c := range dig(tpl.doc, "Conditions").(map[string]any) {
		tpl.conditions[name] = tpl.eval(c) == true
	}
	return tpl
}

// The helpers of the tests of template.yaml.
var (
	dig        = lambdatest.Dig
	statements = lambdatest.Statements
	toStrings  = lambdatest.ToStrings
)

// eval resolves the intrinsic functions of v that a policy and an
// environment use: Ref, Condition, Fn::If, Fn::Equals, Fn::Not, Fn::And,
// Fn::Or, Fn::Sub, Fn::Join, Fn::Split, Fn::Select. Others are kept.
func (t *template) eval(v any) any {
	switch x := v.(type) {
	case []any:
		var out []any
		for _, e := range x {
			if r := t.eval(e); r != (noValue{}) {
				out = append(out, r)
			}
		}
		return out
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if r, ok := t.call(k, arg); ok {
					return r
				}
			}
		}
		out := map[string]any{}
		for k, e := range x {
			if r := t.eval(e); r != (noValue{}) {
				out[k] = r
			}
		}
		return out
	}
	return v
}

// call applies the function named k; ok is false when k is no function.
func (t *template) call(k string, arg any) (any, bool) {
	args, _ := arg.([]any)
	switch k {
	case "Ref":
		return t.params[arg.(string)], true
	case "Condition":
		return t.conditions[arg.(string)], true
	case "Fn::If":
		if t.conditions[args[0].(string)] {
			return t.eval(args[1]), true
		}
		return t.eval(args[2]), true
	case "Fn::Equals":
		return fmt.Sprint(t.eval(args[0])) == fmt.Sprint(t.eval(args[1])), true
	case "Fn::Not":
		return t.eval(args[0]) != true, true
	case "Fn::And", "Fn::Or":
		all, some := true, false
		for _, a := range args {
			b := t.eval(a) == true
			all, some = all && b, some || b
		}
		return map[bool]bool{true: all, false: some}[k == "Fn::And"], true
	case "Fn::Join":
		return strings.Join(toStrings(t.eval(args[1])), args[0].(string)), true
	case "Fn::Split":
		var out []any
		for _, s := range strings.Split(t.eval(args[1]).(string), args[0].(string)) {
			out = append(out, s)
		}
		return out, true
	case "Fn::Select":
		i, _ := strconv.Atoi(fmt.Sprint(args[0]))
		return t.eval(args[1]).([]any)[i], true
	case "Fn::Sub":
		text, vars := "", map[string]any{}
		if s, ok := arg.(string); ok {
			text = s
		} else {
			text, vars = args[0].(string), t.eval(args[1]).(map[string]any)
		}
		return t.sub(text, vars), true
	}
	return nil, false
}

// sub replaces ${Name} with a variable's value, a parameter's or a pseudo
// parameter's.
func (t *template) sub(text string, vars map[string]any) string {
	var b strings.Builder
	for {
		i := strings.Index(text, "${")
		if i < 0 {
			return b.String() + text
		}
		j := strings.Index(text[i:], "}")
		name := text[i+2 : i+j]
		v, ok := vars[name]
		if !ok {
			v = t.params[name]
		}
		b.WriteString(text[:i] + fmt.Sprint(v))
		text = text[i+j+1:]
	}
}

// functions are the template's AWS::Serverless::Function resources.
func (t *template) functions() map[string]any {
	out := map[string]any{}
	for name, r := range dig(t.doc, "Resources").(map[string]any) {
		if dig(r, "Type") == "AWS::Serverless::Function" {
			out[name] = r
		}
	}
	return out
}
