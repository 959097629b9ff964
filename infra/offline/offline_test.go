package offline

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/llm"
)

func TestSplitQuestion(t *testing.T) {
	t.Parallel()
	cases := map[string]int{
		"How does the context package carry cancellation?":                                                                                0,
		"How do goroutines and channels work?":                                                                                            0,
		"How do goroutines work, and how does the context package carry cancellation?":                                                    2,
		"What is sync.Pool for? How does net/http serve requests?":                                                                        2,
		"- how maps grow\n- how slices grow\n- what escape analysis does":                                                                 3,
		"How does x work? Bring back the key facts with their sources.":                                                                   0,
		"Explain channels; explain mutexes in the sync package; explain the atomic operations":                                            0,
		"How does sync.WaitGroup wait for goroutines, how does context.WithTimeout cancel work, and how does compress/gzip write a file?": 3,
		"What does strings.Cut return, what does strings.Fields do; how does bytes.Buffer grow?":                                          3,
		"How does net/http serve requests, and what is a ServeMux?":                                                                       2,
		"What does sync/atomic provide, and when should it be used?":                                                                      0,
	}
	for q, want := range cases {
		if got := splitQuestion(q); len(got) != want {
			t.Errorf("splitQuestion(%q) = %q, want %d parts", q, got, want)
		}
	}
}

func TestSentencesKeepIdentifiersWhole(t *testing.T) {
	t.Parallel()
	got := sentences("Use context.Context for\ncancellation. It carries deadlines, e.g. timeouts.\n\nfunc Foo")
	want := []string{"Use context.Context for cancellation.", "It carries deadlines, e.g. timeouts.", "func Foo"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q", got)
	}
}

// TestPolicyIsDeterministicAndEndsWithAReport replays the policy against
// canned tool results and checks its turns.
func TestPolicyIsDeterministicAndEndsWithAReport(t *testing.T) {
	t.Parallel()
	tools := []llm.ToolSpec{{Name: "search"}, {Name: "read"}, {Name: "remember"}}
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "How does the context package carry cancellation?"}}
	m := &Model{}
	results := map[string]string{
		"search":   "[id 7] package context (https://pkg.go.dev/context)\nPackage context defines the Context type.",
		"read":     "[id 7] package context (https://pkg.go.dev/context)\n\nPackage context defines the Context type, which carries deadlines and cancellation signals. Cancellation propagates to derived contexts.",
		"remember": "Remembered as document 9.",
	}
	var names []string
	for turn := 0; turn < 8; turn++ {
		resp, err := m.Complete(context.Background(), llm.Request{Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		again, _ := m.Complete(context.Background(), llm.Request{Messages: msgs, Tools: tools})
		a, _ := json.Marshal(resp.Message)
		b, _ := json.Marshal(again.Message)
		if string(a) != string(b) {
			t.Fatalf("turn %d differs between two identical calls", turn)
		}
		if resp.Usage.PromptTokens == 0 || resp.Usage.CostUSD != 0 {
			t.Fatalf("usage %+v", resp.Usage)
		}
		msgs = append(msgs, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			report := resp.Message.Content
			if !strings.Contains(report, "carries deadlines and cancellation signals. [1]") ||
				!strings.Contains(report, "[1] package context — https://pkg.go.dev/context") ||
				!strings.Contains(report, "not a language model") {
				t.Fatalf("report:\n%s", report)
			}
			if got := strings.Join(names, ","); got != "search,read,remember" {
				t.Fatalf("tools used %s", got)
			}
			return
		}
		for _, c := range resp.Message.ToolCalls {
			names = append(names, c.Name)
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: results[c.Name]})
		}
	}
	t.Fatal("no report after 8 turns")
}

func TestMergesSubagentReportsRenumbered(t *testing.T) {
	t.Parallel()
	s := &state{task: "How do maps and slices grow?", reports: "## maps-1 (run 2): succeeded\n# Report\n\n## Findings\n" +
		"- Maps grow by doubling buckets. [1]\n\n## Sources\n[1] package maps — https://pkg.go.dev/maps\n\n" +
		"## slices-2 (run 3): failed\nerror: budget exhausted"}
	got := s.report()
	for _, want := range []string{"### maps-1 (run 2): succeeded", "- Maps grow by doubling buckets. [1]",
		"[1] package maps — https://pkg.go.dev/maps", "### slices-2 (run 3): failed", "budget exhausted"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

func TestMultiByteTopicsStayValidUTF8(t *testing.T) {
	t.Parallel()
	task := "éléphants et goroutines, qu'est-ce que c'est? 日本語のチャネルはどう動く? ünïcode everywhere?"
	if got := capitalize("émile"); got != "Émile" {
		t.Errorf("capitalize: %q", got)
	}
	for i, p := range splitQuestion(task) {
		if !utf8.ValidString(p) {
			t.Errorf("part %q is not valid UTF-8", p)
		}
		if name := partName(p, i); !regexp.MustCompile(`^[A-Za-z0-9-]{1,40}$`).MatchString(name) {
			t.Errorf("part name %q is not a valid sub-agent name", name)
		}
	}
	if s := oneLine(strings.Repeat("日", 50), 7); !utf8.ValidString(s) || utf8.RuneCountInString(s) != 7 {
		t.Errorf("oneLine cut %q", s)
	}
}

func TestThreePartQuestionKeepsEveryPart(t *testing.T) {
	t.Parallel()
	got := splitQuestion("How does sync.WaitGroup wait for goroutines, how does context.WithTimeout cancel work, and how does compress/gzip write a file?")
	want := []string{"How does sync.WaitGroup wait for goroutines?", "How does context.WithTimeout cancel work?", "How does compress/gzip write a file?"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestSentencesThatPointBackAreNotQuoted(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"Outside of those two special cases, ServeFile does not use r.URL.Path for selecting the file.": true,
		"It is safe to call Done from several goroutines at the same time.":                             true,
		"In that case the handler replies with a redirect to the canonical path.":                       true,
		"ServeFile replies to the request with the contents of the named file or directory.":            false,
		"The main goroutine calls Add to set the number of goroutines to wait for.":                     false,
	} {
		if got := !quotable(s); got != want {
			t.Errorf("left out %v, want %v: %q", got, want, s)
		}
	}
}

// TestWeakEvidenceSaysTheDatasetDoesNotCover: a question whose words the
// documents read never use gets no findings but the statement that the
// dataset does not cover it; a question they answer gets its findings.
func TestWeakEvidenceSaysTheDatasetDoesNotCover(t *testing.T) {
	t.Parallel()
	tls := source{title: "package crypto/tls", url: "https://pkg.go.dev/crypto/tls",
		text: "Package tls partially implements TLS 1.2, as specified in RFC 5246, and TLS 1.3, as specified in RFC 8446.\n\n" +
			"A Config structure is used to configure a TLS client or server. After one has been passed to a TLS function it must not be modified."}
	s := &state{task: "How do I configure TLS certificates for a Kubernetes ingress controller?", docs: []source{tls}}
	got := s.report()
	if !strings.Contains(got, "The documents of this dataset do not cover this question") ||
		!strings.Contains(got, "kubernetes") || strings.Contains(got, "[1]") {
		t.Fatalf("report:\n%s", got)
	}
	s = &state{task: "How does crypto/tls implement TLS 1.3?", docs: []source{tls}}
	if got := s.report(); strings.Contains(got, "do not cover") || !strings.Contains(got, "RFC 8446. [1]") {
		t.Fatalf("report:\n%s", got)
	}
}

func TestPartsWithoutAPackageAreAskedOfTheQuestionsPackage(t *testing.T) {
	t.Parallel()
	q := "Which RFC does encoding/base64 implement, and how does URLEncoding differ from StdEncoding?"
	got := withPackage(splitQuestion(q), q)
	want := []string{"Which RFC does encoding/base64 implement?", "How does URLEncoding differ from StdEncoding in the encoding/base64 package?"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q", got)
	}
	demo := "How do goroutines work, and how does the context package carry cancellation, and how does net/http serve requests?"
	if got := withPackage(splitQuestion(demo), demo); got[0] != "How do goroutines work?" {
		t.Errorf("a question of two packages gave %q", got)
	}
}
