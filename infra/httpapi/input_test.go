package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// errorOf returns the error object of an answer, or nil.
func errorOf(body map[string]any) map[string]any {
	e, _ := body["error"].(map[string]any)
	return e
}

func TestCreateChecksEachFieldStrictly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct{ name, body, field, says string }{
		{"explicit zero max_steps", `{"topic":"x","max_steps":0}`, "max_steps", "leave it out for the default 10"},
		{"upper-case key", `{"TOPIC":"x"}`, "TOPIC", `did you mean "topic"`},
		{"mixed-case key", `{"topic":"x","Max_Steps":5}`, "Max_Steps", "allowed: topic, max_steps, dataset, max_cost_usd, max_tokens"},
		{"NUL in dataset", `{"topic":"x","dataset":"go\u0000doc"}`, "dataset", "NUL"},
		{"long dataset", `{"topic":"x","dataset":"` + strings.Repeat("d", 101) + `"}`, "dataset", "at most 100"},
		{"invalid UTF-8 topic", "{\"topic\":\"a\xffb\"}", "topic", "UTF-8"},
		{"invalid UTF-8 dataset", "{\"topic\":\"x\",\"dataset\":\"\xc3\"}", "dataset", "UTF-8"},
		{"lone surrogate", `{"topic":"a\ud800b"}`, "topic", "surrogate"},
		{"reversed surrogates", `{"topic":"\udc00\ud800"}`, "topic", "surrogate"},
		{"huge max_steps", `{"topic":"x","max_steps":1e400}`, "max_steps", "whole JSON number"},
		{"fractional max_steps", `{"topic":"x","max_steps":2.5}`, "max_steps", "whole JSON number"},
		{"huge max_tokens", `{"topic":"x","max_tokens":1e30}`, "max_tokens", "whole JSON number"},
		{"topic of the wrong type", `{"topic":["x"]}`, "topic", "JSON string"},
		{"2001 characters", `{"topic":"` + strings.Repeat("é", 2001) + `"}`, "topic", "2001 characters"},
		{"trailing brace", `{"topic":"x"} }`, "", "after the JSON object"},
		{"budget too small for a report", `{"topic":"x","max_tokens":10}`, "max_tokens", "need at least"},
		{"dollar budget that rounds to nothing", `{"topic":"x","max_cost_usd":1e-300}`, "max_cost_usd", "rounds to $0"},
		{"array", `[{"topic":"x"}]`, "", "must be a JSON object"},
		{"null", `null`, "", "not null"},
		{"empty", ``, "", "empty"},
	} {
		code, body := b.call(t, b.alice, "POST", "/v1/gb/research", c.body)
		e := errorOf(body)
		if code != http.StatusBadRequest || e == nil || fmt.Sprint(e["field"]) != c.field && c.field != "" ||
			!strings.Contains(fmt.Sprint(e["message"]), c.says) {
			t.Errorf("%s: got %d %v, want 400 naming %q saying %q", c.name, code, body, c.field, c.says)
		}
	}
	if _, list := b.call(t, b.alice, "GET", "/v1/gb/research", ""); len(list["runs"].([]any)) != 0 {
		t.Fatalf("refused requests created runs: %v", list)
	}
}

func TestCreateAcceptsWhatTheLimitsAllow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		name, body string
		maxSteps   float64
	}{
		{"no max_steps is the default", `{"topic":"x"}`, 10},
		{"null max_steps is the default", `{"topic":"x","max_steps":null}`, 10},
		{"2000 two-byte characters", `{"topic":"` + strings.Repeat("é", 2000) + `","max_steps":1}`, 1},
		{"a surrogate pair", `{"topic":"\ud83d\ude00 and \\ud800 as text","max_steps":40}`, 40},
	} {
		code, run := b.call(t, b.alice, "POST", "/v1/gb/research", c.body)
		if code != http.StatusAccepted || run["max_steps"] != c.maxSteps {
			t.Errorf("%s: got %d %v, want 202 with max_steps %v", c.name, code, run, c.maxSteps)
			continue
		}
		// Cancel it so the next one is not over the limit of working researches.
		if code, _ := b.call(t, b.alice, "POST", fmt.Sprintf("/v1/gb/research/%v/cancel", run["id"]), ""); code != http.StatusOK {
			t.Fatalf("cancel: %d", code)
		}
	}
	_, list := b.call(t, b.alice, "GET", "/v1/gb/research?limit=1", "")
	if topic := list["runs"].([]any)[0].(map[string]any)["topic"]; topic != "😀 and \\ud800 as text" {
		t.Fatalf("the topic was not kept as sent: %q", topic)
	}
}

func TestMessageBodyIsCheckedAgainstItsOwnFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"x"}`)
	path := fmt.Sprintf("/v1/gb/research/%v/messages", run["id"])
	for _, c := range []struct{ name, body, field, says string }{
		{"a research's field", `{"topic":"x"}`, "topic", `unknown field "topic"; allowed: text`},
		{"upper-case key", `{"TEXT":"hi"}`, "TEXT", `did you mean "text"`},
		{"invalid UTF-8", "{\"text\":\"\xfe\"}", "text", "UTF-8"},
		{"wrong type", `{"text":1}`, "text", "JSON string"},
	} {
		code, body := b.call(t, b.alice, "POST", path, c.body)
		e := errorOf(body)
		msg := fmt.Sprint(e["message"])
		if code != http.StatusBadRequest || e == nil || e["field"] != c.field || !strings.Contains(msg, c.says) || strings.Contains(msg, "max_steps") {
			t.Errorf("%s: got %d %v, want 400 naming %q saying %q", c.name, code, body, c.field, c.says)
		}
	}
}

// TestMessageTextIsCountedInCharacters: 10000 two-byte characters are
// within the limit (the root has no inbox, hence 409), 10001 are not.
func TestMessageTextIsCountedInCharacters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"x"}`)
	path := fmt.Sprintf("/v1/gb/research/%v/messages", run["id"])
	if code, body := b.call(t, b.alice, "POST", path, `{"text":"`+strings.Repeat("é", 10000)+`"}`); code != http.StatusConflict {
		t.Errorf("10000 characters: got %d %v, want 409 (within the limit; the root has no inbox)", code, body)
	}
	code, body := b.call(t, b.alice, "POST", path, `{"text":"`+strings.Repeat("é", 10001)+`"}`)
	if e := errorOf(body); code != http.StatusBadRequest || e == nil || e["field"] != "text" {
		t.Errorf("10001 characters: got %d %v, want 400 naming text", code, body)
	}
}
