package lambdatest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/functions/worker/work"
	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
)

// retentions are the RetentionInDays values CloudWatch Logs accepts (the
// newer 1827-day and longer ones included).
var retentions = []string{"1", "3", "5", "7", "14", "30", "60", "90", "120", "150", "180", "365", "400", "545",
	"731", "1096", "1827", "2192", "2557", "2922", "3288", "3653"}

// noValue is CloudFormation's "leave this property out".
var noValue = map[string]any{"Ref": "AWS::NoValue"}

// TestTemplateLogGroups: every function writes to a log group of the
// template, named /aws/lambda/<its fixed name> and kept LogRetentionDays,
// which its LoggingConfig names, so the group exists before the function
// and Lambda never creates one of its own. The access logs' group is kept
// as long, and every group says what a stack deletion does to it.
func TestTemplateLogGroups(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	p := dig(tpl.Parameters, "LogRetentionDays")
	if dig(p, "Type") != "Number" || dig(p, "Default") != "30" {
		t.Errorf("LogRetentionDays %v: want a Number, 30 by default", p)
	}
	for _, v := range toStrings(dig(p, "AllowedValues")) {
		if !slices.Contains(retentions, v) {
			t.Errorf("LogRetentionDays allows %s, which CloudWatch Logs does not", v)
		}
	}
	used := map[string]string{}
	for name, fn := range tpl.functions() {
		fname, ok := dig(fn, "Properties", "FunctionName", "Fn::Sub").(string)
		if !ok {
			t.Errorf("%s: FunctionName %v, want a fixed !Sub name", name, dig(fn, "Properties", "FunctionName"))
			continue
		}
		group, _ := dig(fn, "Properties", "LoggingConfig", "LogGroup", "Ref").(string)
		if group == "" {
			t.Errorf("%s: LoggingConfig.LogGroup is %v, want a !Ref to its log group", name, dig(fn, "Properties", "LoggingConfig", "LogGroup"))
			continue
		}
		if prev, dup := used[group]; dup {
			t.Errorf("%s and %s share the log group %s", prev, name, group)
		}
		used[group] = name
		lg := tpl.Resources[group]
		if lg["Type"] != "AWS::Logs::LogGroup" {
			t.Errorf("%s: its log group %s is a %v", name, group, lg["Type"])
			continue
		}
		if want := map[string]any{"Fn::Sub": "/aws/lambda/" + fname}; !jsonEqual(dig(lg, "Properties", "LogGroupName"), want) {
			t.Errorf("%s: log group named %v, want %v, Lambda's name for the function's group", name, dig(lg, "Properties", "LogGroupName"), want)
		}
	}
	groups := 0
	for name, r := range tpl.Resources {
		if r["Type"] != "AWS::Logs::LogGroup" {
			continue
		}
		groups++
		if !jsonEqual(dig(r, "Properties", "RetentionInDays"), map[string]any{"Ref": "LogRetentionDays"}) {
			t.Errorf("%s keeps its logs %v days, want LogRetentionDays", name, dig(r, "Properties", "RetentionInDays"))
		}
		if r["DeletionPolicy"] == nil || r["UpdateReplacePolicy"] == nil {
			t.Errorf("%s: DeletionPolicy %v, UpdateReplacePolicy %v; both should be explicit", name, r["DeletionPolicy"], r["UpdateReplacePolicy"])
		}
	}
	if groups != len(tpl.functions())+1 {
		t.Errorf("%d log groups, want one per function and the access logs'", groups)
	}
}

// contextVar matches an access-log variable, quoted or not.
var contextVar = regexp.MustCompile(`"?\$context\.[A-Za-z.]+"?`)

// TestTemplateAccessLogs: the HTTP API writes one JSON object per request
// to its own log group, with the request id (the API's apiRequestId), the
// status, the route, the latencies and the function's request id.
func TestTemplateAccessLogs(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	settings := dig(tpl.Resources["HttpApi"], "Properties", "AccessLogSettings")
	if !jsonEqual(dig(settings, "DestinationArn"), map[string]any{"Fn::GetAtt": []any{"HttpApiAccessLogs", "Arn"}}) {
		t.Errorf("access logs go to %v, want the HttpApiAccessLogs group", dig(settings, "DestinationArn"))
	}
	format := fmt.Sprint(dig(settings, "Format"))
	// What API Gateway writes: a quoted variable becomes a string, an
	// unquoted one a number, or the quoted message of messageString.
	line := contextVar.ReplaceAllStringFunc(format, func(v string) string {
		switch {
		case strings.HasPrefix(v, `"`):
			return `"x"`
		case strings.HasSuffix(v, ".messageString"):
			return `"Not Found"`
		default:
			return "200"
		}
	})
	var got map[string]any
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("an access log line is not a JSON object: %v\n%s", err, line)
	}
	// Which variable each field holds.
	var fields map[string]string
	quoted := contextVar.ReplaceAllStringFunc(format, func(v string) string { return `"` + strings.Trim(v, `"`) + `"` })
	if err := json.Unmarshal([]byte(quoted), &fields); err != nil {
		t.Fatal(err)
	}
	for field, v := range map[string]string{
		"requestId":       "$context.requestId",
		"status":          "$context.status",
		"routeKey":        "$context.routeKey",
		"responseLatency": "$context.responseLatency",
		"lambdaRequestId": "$context.integration.requestId",
	} {
		if fields[field] != v {
			t.Errorf("access log field %s is %q, want %s", field, fields[field], v)
		}
	}
	if _, ok := got["status"].(float64); !ok {
		t.Errorf("status should be a number: %v", got["status"])
	}
}

// alarmActions are the actions of every alarm: the optional topic.
var alarmActions = map[string]any{"Fn::If": []any{"HasAlarmTopic", []any{map[string]any{"Ref": "AlarmTopicArn"}}, noValue}}

// TestTemplateAlarms: the worker's errors and throttles, the API's 5xx,
// step jobs left waiting and the scheduler's failure queue each have an
// alarm on the right metric, and every alarm notifies the AlarmTopicArn
// parameter when it is set and nothing when it is empty.
func TestTemplateAlarms(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	if p := dig(tpl.Parameters, "AlarmTopicArn"); dig(p, "Default") != "" {
		t.Errorf("AlarmTopicArn should be optional (empty by default): %v", p)
	}
	if c := tpl.Conditions["HasAlarmTopic"]; !jsonEqual(c, map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "AlarmTopicArn"}, ""}}}}) {
		t.Errorf("condition HasAlarmTopic is %v", c)
	}
	filter := dig(tpl.Resources["StepJobWaitMetric"], "Properties", "MetricTransformations")
	transforms, _ := filter.([]any)
	if len(transforms) != 1 {
		t.Fatalf("StepJobWaitMetric transforms %v, want one metric", filter)
	}
	for _, tc := range []struct {
		alarm, namespace, metric, statistic, comparison, threshold string
		namespaceSub                                               bool
		dimension                                                  string
		value                                                      any
	}{
		{"WorkerErrorsAlarm", "AWS/Lambda", "Errors", "Sum", "GreaterThanOrEqualToThreshold", "1", false,
			"FunctionName", map[string]any{"Ref": "WorkerFunction"}},
		{"WorkerThrottlesAlarm", "AWS/Lambda", "Throttles", "Sum", "GreaterThanOrEqualToThreshold", "1", false,
			"FunctionName", map[string]any{"Ref": "WorkerFunction"}},
		{"Api5xxAlarm", "AWS/ApiGateway", "5xx", "Sum", "GreaterThanOrEqualToThreshold", "1", false,
			"ApiId", map[string]any{"Ref": "HttpApi"}},
		{"SchedulerFailuresAlarm", "AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", "GreaterThanThreshold", "0", false,
			"QueueName", map[string]any{"Fn::GetAtt": []any{"SchedulerFailures", "QueueName"}}},
		// The metric the worker's log lines make: the age of the oldest
		// available step job when an invocation ended, 5 minutes or more.
		{"StepJobsWaitingAlarm", fmt.Sprint(dig(transforms[0], "MetricNamespace", "Fn::Sub")), fmt.Sprint(dig(transforms[0], "MetricName")),
			"Maximum", "GreaterThanOrEqualToThreshold", "300", true, "", nil},
	} {
		r := tpl.Resources[tc.alarm]
		if r["Type"] != "AWS::CloudWatch::Alarm" {
			t.Errorf("%s is %v, want an alarm", tc.alarm, r["Type"])
			continue
		}
		p := r["Properties"]
		ns := dig(p, "Namespace")
		if tc.namespaceSub {
			ns = dig(p, "Namespace", "Fn::Sub")
		}
		if ns != tc.namespace || dig(p, "MetricName") != tc.metric || dig(p, "Statistic") != tc.statistic ||
			dig(p, "ComparisonOperator") != tc.comparison || dig(p, "Threshold") != tc.threshold {
			t.Errorf("%s watches %v %v (%v %v %v), want %s %s (%s %s %s)", tc.alarm, ns, dig(p, "MetricName"),
				dig(p, "Statistic"), dig(p, "ComparisonOperator"), dig(p, "Threshold"),
				tc.namespace, tc.metric, tc.statistic, tc.comparison, tc.threshold)
		}
		var want any = []any{map[string]any{"Name": tc.dimension, "Value": tc.value}}
		if tc.dimension == "" {
			want = nil
		}
		if !jsonEqual(dig(p, "Dimensions"), want) {
			t.Errorf("%s: dimensions %v, want %v", tc.alarm, dig(p, "Dimensions"), want)
		}
		if dig(p, "TreatMissingData") != "notBreaching" {
			t.Errorf("%s: TreatMissingData %v; no data means nothing happened", tc.alarm, dig(p, "TreatMissingData"))
		}
	}
	for name, r := range tpl.Resources {
		if r["Type"] != "AWS::CloudWatch::Alarm" {
			continue
		}
		for _, k := range []string{"AlarmActions", "OKActions"} {
			if !jsonEqual(dig(r, "Properties", k), alarmActions) {
				t.Errorf("%s: %s %v, want the AlarmTopicArn when set", name, k, dig(r, "Properties", k))
			}
		}
	}
}

// filterPattern and metricValue are the shapes of the worker's metric
// filter: one field's value selects the lines, another is the value.
var (
	filterPattern = regexp.MustCompile(`^\{ \$\.(\w+) = "([^"]*)" \}$`)
	metricValue   = regexp.MustCompile(`^\$\.(\w+)$`)
)

// lockedBuffer collects log lines written from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestTemplateMetricFilterMatchesTheWorker runs a worker invocation with
// the logger Lambda gives it and checks that the template's metric filter
// selects exactly one of its lines, whose value field is a number: the
// StepJobsWaitingAlarm's metric is made of what the worker really logs.
func TestTemplateMetricFilterMatchesTheWorker(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	mf := tpl.Resources["StepJobWaitMetric"]
	if mf["Type"] != "AWS::Logs::MetricFilter" || !jsonEqual(dig(mf, "Properties", "LogGroupName"), map[string]any{"Ref": "WorkerLogGroup"}) {
		t.Fatalf("StepJobWaitMetric: %v on %v, want a metric filter on the worker's log group", mf["Type"], dig(mf, "Properties", "LogGroupName"))
	}
	pattern := filterPattern.FindStringSubmatch(fmt.Sprint(dig(mf, "Properties", "FilterPattern")))
	transforms, _ := dig(mf, "Properties", "MetricTransformations").([]any)
	if pattern == nil || len(transforms) != 1 {
		t.Fatalf("filter %v with %v: want { $.field = \"value\" } and one metric", dig(mf, "Properties", "FilterPattern"), transforms)
	}
	value := metricValue.FindStringSubmatch(fmt.Sprint(dig(transforms[0], "MetricValue")))
	if value == nil {
		t.Fatalf("MetricValue %v, want $.field", dig(transforms[0], "MetricValue"))
	}

	pool, err := db.Open(context.Background(), db.PoolConfig{URL: dbtest.NewURL(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}, Work: true,
		Config: jobs.Config{StepTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	w, err := work.New(work.Deps{Service: agent, Pool: pool, Logger: gbaws.NewLogger(&logs, "JSON", slog.LevelInfo),
		Config: work.Config{StepTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.Handle(ctx, work.Event{Source: gbaws.SourceSweep}); err != nil {
		t.Fatal(err)
	}
	matched := 0
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a worker log line is not JSON: %v\n%s", err, line)
		}
		if rec[pattern[1]] != pattern[2] {
			continue
		}
		matched++
		if _, ok := rec[value[1]].(float64); !ok {
			t.Errorf("the line the filter selects has %s = %v, want a number:\n%s", value[1], rec[value[1]], line)
		}
	}
	if matched != 1 {
		t.Fatalf("the filter %s selects %d lines of an invocation, want 1:\n%s", dig(mf, "Properties", "FilterPattern"), matched, logs.String())
	}
}

// TestTemplateScheduleDeadLetters: every ScheduleV2 event of the scheduler
// sends what it could not deliver to the SchedulerFailures queue, a
// standard queue (EventBridge Scheduler takes no FIFO queue).
func TestTemplateScheduleDeadLetters(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	events, _ := dig(tpl.Resources["SchedulerFunction"], "Properties", "Events").(map[string]any)
	found := 0
	for name, e := range events {
		if dig(e, "Type") != "ScheduleV2" {
			continue
		}
		found++
		if dlq := dig(e, "Properties", "DeadLetterConfig"); !jsonEqual(dlq, map[string]any{"Arn": map[string]any{"Fn::GetAtt": []any{"SchedulerFailures", "Arn"}}}) {
			t.Errorf("%s: DeadLetterConfig %v, want the SchedulerFailures queue's ARN", name, dlq)
		}
	}
	if found == 0 {
		t.Fatal("the scheduler has no ScheduleV2 event")
	}
	if fifo := dig(tpl.Resources["SchedulerFailures"], "Properties", "FifoQueue"); fifo != nil {
		t.Errorf("SchedulerFailures FifoQueue %v; EventBridge Scheduler needs a standard queue", fifo)
	}
}

// TestTemplateCORS: with no origins there is no CORS configuration; with
// some, browsers may send every method and request header the API reads
// and read the headers it answers with.
func TestTemplateCORS(t *testing.T) {
	t.Parallel()
	tpl := loadTemplate(t)
	if p := dig(tpl.Parameters, "CorsAllowedOrigins"); dig(p, "Type") != "CommaDelimitedList" || dig(p, "Default") != "" {
		t.Errorf("CorsAllowedOrigins %v: want a CommaDelimitedList, empty by default", p)
	}
	join := map[string]any{"Fn::Join": []any{",", map[string]any{"Ref": "CorsAllowedOrigins"}}}
	if c := tpl.Conditions["HasCors"]; !jsonEqual(c, map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{join, ""}}}}) {
		t.Errorf("condition HasCors is %v", c)
	}
	branches, _ := dig(tpl.Resources["HttpApi"], "Properties", "DefinitionBody", "x-amazon-apigateway-cors", "Fn::If").([]any)
	if len(branches) != 3 || branches[0] != "HasCors" || !jsonEqual(branches[2], noValue) {
		t.Fatalf("x-amazon-apigateway-cors %v, want !If [HasCors, config, no value]", branches)
	}
	cors := branches[1]
	if !jsonEqual(dig(cors, "allowOrigins"), map[string]any{"Ref": "CorsAllowedOrigins"}) {
		t.Errorf("allowOrigins %v, want the CorsAllowedOrigins parameter", dig(cors, "allowOrigins"))
	}
	lower := func(v any) []string {
		var out []string
		for _, s := range toStrings(v) {
			out = append(out, strings.ToLower(s))
		}
		return out
	}
	methods := lower(dig(cors, "allowMethods"))
	for _, list := range routeLists(t, tpl.root) {
		for _, r := range list {
			if !slices.Contains(methods, strings.ToLower(r.Method)) {
				t.Errorf("CORS does not allow %s, which %s takes", r.Method, r.Path)
			}
		}
	}
	for _, h := range []string{"Authorization", "Content-Type", httpapi.IdempotencyKeyHeader} {
		if !slices.Contains(lower(dig(cors, "allowHeaders")), strings.ToLower(h)) {
			t.Errorf("CORS does not allow the request header %s", h)
		}
	}
	for _, h := range []string{"Location", "Retry-After", httpapi.ReplayedHeader} {
		if !slices.Contains(lower(dig(cors, "exposeHeaders")), strings.ToLower(h)) {
			t.Errorf("CORS does not expose the answer header %s", h)
		}
	}
	if dig(cors, "allowCredentials") != nil {
		t.Errorf("allowCredentials %v: the API takes bearer keys, never cookies", dig(cors, "allowCredentials"))
	}
}
