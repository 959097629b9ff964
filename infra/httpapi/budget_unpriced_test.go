package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/openai"
)

// A dollar budget on a model gb has no price for is refused with a 400
// that names the model and how to give it a price; a token budget, and a
// dollar budget once GB_MODEL_PROFILES prices the model, are accepted.
func TestDollarBudgetOnAnUnpricedModelIsRefused(t *testing.T) {
	t.Parallel()
	newModel := func(profiles map[string]openai.ProfileOverride) *openai.Model {
		m, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:9/v1", APIKey: "sk-x", Model: "my-model",
			Profiles: profiles})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	b := setupModel(t, newModel(nil))
	code, body := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"x","max_cost_usd":0.002}`)
	e := errorOf(body)
	msg := fmt.Sprint(e["message"])
	if code != http.StatusBadRequest || e == nil || e["field"] != "max_cost_usd" || !strings.Contains(msg, `my-model`) ||
		!strings.Contains(msg, "GB_MODEL_PROFILES") || !strings.Contains(msg, "no price") {
		t.Fatalf("got %d %v, want 400 on max_cost_usd naming my-model and GB_MODEL_PROFILES", code, body)
	}
	if code, body := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"x","max_tokens":50000}`); code != http.StatusAccepted {
		t.Errorf("a token budget on the unpriced model: %d %v, want 202", code, body)
	}
	in, out := 0.5, 1.5
	priced := setupModel(t, newModel(map[string]openai.ProfileOverride{"my-model": {Input: &in, Output: &out}}))
	if code, body := priced.call(t, priced.alice, "POST", "/v1/gb/research", `{"topic":"x","max_cost_usd":0.5}`); code != http.StatusAccepted {
		t.Errorf("a dollar budget on the model priced by GB_MODEL_PROFILES: %d %v, want 202", code, body)
	}
}
