package jobs

import (
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// A bundle's hash is a function of its content alone: the same content
// hashes the same, and a change of a prompt, a type or a tool's schema
// changes it. The gb version is kept beside it, not hashed, so that a
// deploy that changes only the code leaves researches on the same bundle.
func TestBundleHash(t *testing.T) {
	t.Parallel()
	content := func() bundleContent {
		return bundleContent{Prompts: prompts.Embedded(),
			Types:  []*AgentType{{Name: "researcher", Description: "d", MaxSteps: 5, Prompt: "p"}},
			Tools:  []llm.ToolSpec{{Name: "search", Description: "s", Parameters: []byte(`{"type":"object"}`)}},
			Limits: bundleLimits{MaxCompletionTokens: 1000}}
	}
	hash := func(c bundleContent, version string) string {
		bh, err := newBehaviour(c, version)
		if err != nil {
			t.Fatal(err)
		}
		return bh.hash
	}
	base := hash(content(), "v1")
	if len(base) != 64 || hash(content(), "v2") != base {
		t.Fatalf("hash %q, with another version %q", base, hash(content(), "v2"))
	}
	changes := map[string]func(*bundleContent){
		"prompt": func(c *bundleContent) { c.Prompts.Research += " more" },
		"type":   func(c *bundleContent) { c.Types[0].Prompt = "another" },
		"tool":   func(c *bundleContent) { c.Tools[0].Parameters = []byte(`{"type":"object","properties":{}}`) },
		"limit":  func(c *bundleContent) { c.Limits.MaxCompletionTokens = 2000 },
	}
	for what, change := range changes {
		c := content()
		change(&c)
		if hash(c, "v1") == base {
			t.Errorf("a changed %s left the hash as it was", what)
		}
	}
}

// A stored bundle is read back byte for byte, its prompts' templates
// working; content that does not match its hash is refused.
func TestStoredBundle(t *testing.T) {
	t.Parallel()
	bh, err := newBehaviour(bundleContent{Prompts: prompts.Embedded(),
		Tools: []llm.ToolSpec{{Name: "search", Parameters: []byte(`{"type":"object","required":["query"]}`)}}}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	back, err := storedBehaviour(bh.hash, "v1", string(bh.encoded))
	if err != nil {
		t.Fatal(err)
	}
	if string(back.tools["search"].Parameters) != `{"type":"object","required":["query"]}` {
		t.Errorf("the tool's schema came back as %s", back.tools["search"].Parameters)
	}
	want, _ := prompts.Report(1000)
	if got, err := back.content.Prompts.Report(1000); err != nil || got != want {
		t.Errorf("the report part from the stored bundle: %v\n%s", err, got)
	}
	tampered := strings.Replace(string(bh.encoded), "research agent", "research robot", 1)
	if _, err := storedBehaviour(bh.hash, "v1", tampered); err == nil || !strings.Contains(err.Error(), "does not match its hash") {
		t.Errorf("tampered content: %v", err)
	}
}
