package lambdatest_test

import (
	"slices"
	"strings"
	"testing"
)

// TestTemplateDeploysThroughAnAlias: every function that takes traffic
// (the API, the worker, the scheduler) publishes a version on each deploy
// behind the alias live, and CodeDeploy moves traffic to it as
// DeploymentType says, after the migrate function has applied the schema
// as the pre-traffic hook, rolling back when one of the function's alarms
// goes off. Every caller names the alias, never the function's latest
// code: the API's and the worker's kicks, the dashboard's routes and the
// scheduler's output. CodeDeploy's role may invoke the hook, and nothing
// else of the stack is invoked unaliased.
func TestTemplateDeploysThroughAnAlias(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	if p := dig(tpl.Parameters, "DeploymentType"); dig(p, "Default") != "Canary10Percent5Minutes" {
		t.Errorf("DeploymentType %v, want a canary by default", p)
	}
	for _, name := range []string{"ApiFunction", "WorkerFunction", "SchedulerFunction"} {
		p := dig(tpl.Resources[name], "Properties")
		if dig(p, "AutoPublishAlias") != "live" {
			t.Errorf("%s: AutoPublishAlias %v, want live", name, dig(p, "AutoPublishAlias"))
		}
		dp := dig(p, "DeploymentPreference")
		if !jsonEqual(dig(dp, "Type"), map[string]any{"Ref": "DeploymentType"}) ||
			!jsonEqual(dig(dp, "Hooks", "PreTraffic"), map[string]any{"Ref": "MigrateFunction"}) ||
			!jsonEqual(dig(dp, "Role"), map[string]any{"Fn::GetAtt": []any{"DeployRole", "Arn"}}) {
			t.Errorf("%s: DeploymentPreference %v, want DeploymentType, DeployRole and migrate as the pre-traffic hook", name, dp)
		}
		alarms, _ := dig(dp, "Alarms").([]any)
		if len(alarms) == 0 {
			t.Errorf("%s: no alarm rolls its deploy back", name)
		}
		for _, a := range alarms {
			ref, _ := dig(a, "Ref").(string)
			if tpl.Resources[ref]["Type"] != "AWS::CloudWatch::Alarm" {
				t.Errorf("%s: rollback alarm %v is not an alarm of the template", name, a)
			}
		}
	}
	if p := dig(tpl.Resources["MigrateFunction"], "Properties"); dig(p, "AutoPublishAlias") != nil || dig(p, "DeploymentPreference") != nil {
		t.Errorf("MigrateFunction: the hook must run its own latest code, with no deployment of its own: %v", p)
	}
	role := dig(tpl.Resources["DeployRole"], "Properties")
	if !jsonEqual(dig(role, "ManagedPolicyArns"), []any{map[string]any{"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/service-role/AWSCodeDeployRoleForLambda"}}) ||
		!strings.Contains(mustJSON(dig(role, "AssumeRolePolicyDocument")), "codedeploy.amazonaws.com") {
		t.Errorf("DeployRole %v, want CodeDeploy's Lambda policy, assumed by CodeDeploy", role)
	}
	var invokesHook bool
	for _, pol := range dig(role, "Policies").([]any) {
		for _, st := range statements([]any{dig(pol, "PolicyDocument")}) {
			if slices.Contains(toStrings(st["Action"]), "lambda:InvokeFunction") {
				invokesHook = jsonEqual(st["Resource"], map[string]any{"Fn::GetAtt": []any{"MigrateFunction", "Arn"}})
			}
		}
	}
	if !invokesHook {
		t.Error("DeployRole may not invoke the migrate function, its pre-traffic hook")
	}
	// The callers of the worker name its alias.
	for _, name := range []string{"ApiFunction", "WorkerFunction"} {
		v := dig(tpl.Resources[name], "Properties", "Environment", "Variables", "WORKER_FUNCTION_NAME")
		if !jsonEqual(v, map[string]any{"Fn::Sub": "${AWS::StackName}-worker:live"}) {
			t.Errorf("%s: WORKER_FUNCTION_NAME %v, want the worker's alias", name, v)
		}
	}
	if v := dig(tpl.Outputs, "SchedulerFunctionArn", "Value"); !jsonEqual(v, map[string]any{"Ref": "SchedulerFunction.Alias"}) {
		t.Errorf("SchedulerFunctionArn output %v, want the scheduler's alias", v)
	}
	// Nothing names a function's unaliased ARN for invoking it.
	for name, r := range tpl.Resources {
		s := mustJSON(r)
		for _, fn := range []string{"ApiFunction", "WorkerFunction", "SchedulerFunction"} {
			if strings.Contains(s, "${"+fn+".Arn}") || strings.Contains(s, `"Fn::GetAtt":["`+fn+`","Arn"]`) {
				t.Errorf("%s names %s's latest code, not its alias", name, fn)
			}
		}
	}
}
