package cite

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// httpDoc is a short page in the form `go doc -all` writes.
var httpDoc = Document{Refs: []string{"https://pkg.go.dev/net/http"}, Title: "package net/http", Read: true, Text: `package http // import "net/http"

Package http provides HTTP client and server implementations.

type Server struct {
	// IdleTimeout is the maximum amount of time to wait for the
	// next request when keep-alives are enabled.
	//
	// If zero, the value of ReadTimeout is used.
	IdleTimeout time.Duration
}

func (s *Server) Close() error
    Close immediately closes all active net.Listeners and any connections
    in state StateNew, StateActive, or StateIdle.

func (s *Server) Shutdown(ctx context.Context) error
    Shutdown gracefully shuts down the server without interrupting any
    active connections. Shutdown works by first closing all open listeners,
    then closing all idle connections, and then waiting indefinitely for
    connections to return to idle and then shut down.

    Shutdown does not attempt to close nor wait for hijacked connections
    such as WebSockets. The caller of Shutdown should separately notify such
    long-lived connections of shutdown and wait for them to close, if desired.

    Once Shutdown has been called on a server, it may not be reused; future
    calls to methods such as Serve will return ErrServerClosed.

var DefaultTransport RoundTripper = &Transport{
	IdleConnTimeout:       90 * time.Second,
	TLSHandshakeTimeout:   10 * time.Second,
}
    DefaultTransport is the default implementation of Transport. It keeps at
    most 40 idle connections and retries a request at most a dozen times.
`}

// signalDoc is a page about another package.
var signalDoc = Document{Refs: []string{"https://pkg.go.dev/os/signal"}, Title: "package os/signal", Read: true, Text: `package signal // import "os/signal"

func NotifyContext(parent context.Context, signals ...os.Signal) (ctx context.Context, stop context.CancelFunc)
    NotifyContext returns a copy of the parent context that is marked done (its
    Done channel is closed) when one of the listed signals arrives, when the
    returned stop function is called, or when the parent context's Done channel
    is closed, whichever happens first.
`}

// verdictOf checks a one-claim report citing [1] httpDoc and [2]
// signalDoc, and returns the claim's verdict and its first pair.
func verdictOf(t *testing.T, claim string) (Verdict, Pair) {
	t.Helper()
	report := claim + "\n\n## Sources\n[1] net/http — https://pkg.go.dev/net/http\n[2] os/signal — https://pkg.go.dev/os/signal\n"
	res := Check(report, []Document{httpDoc, signalDoc})
	if len(res.Claims) != 1 || len(res.Pairs) == 0 {
		t.Fatalf("%q: claims %+v pairs %+v, want one cited claim", claim, res.Claims, res.Pairs)
	}
	return res.Claims[0].Verdict, res.Pairs[0]
}

// TestCauses checks the check at each cause of a wrong verdict it had:
// each claim is written as a capable writer writes it.
func TestCauses(t *testing.T) {
	cases := []struct {
		why, claim string
		want       Verdict
	}{
		{"a quote over four wrapped lines", "- The docs: \"Shutdown gracefully shuts down the server without\n  interrupting any active connections. Shutdown works by first\n  closing all open listeners, then closing all idle\n  connections\" [1]", Supported},
		{"a quote the document does not hold", "The docs say \"Shutdown closes all hijacked connections first\" [1].", Unsupported},
		{"a capitalised word opening a list item's second sentence", "- It is abrupt. Close immediately closes all active listeners and connections in state StateIdle [1].", Supported},
		{"a capitalised word after a colon and a parenthesis", "Note: Shutdown waits indefinitely for connections to return to idle (Graceful, as documented) [1].", Supported},
		{"a name the document lacks", "Shutdown waits indefinitely for connections to return to idle, as Kubernetes expects [1].", Unsupported},
		{"a qualified identifier in its package's document", "`signal.NotifyContext` returns a copy of the parent context that is marked done when one of the listed signals arrives [2].", Supported},
		{"a qualified identifier in another package's document", "`signal.NotifyContext` returns a copy of the parent context that is marked done when one of the listed signals arrives [1].", Unsupported},
		{"a receiver as Go writes it", "`(*Server).Shutdown` gracefully shuts down the server without interrupting any active connections [1].", Supported},
		{"a package-qualified method", "`http.Server.Shutdown` gracefully shuts down the server without interrupting any active connections [1].", Supported},
		{"a field's definition and its default a paragraph on", "`IdleTimeout` is the maximum amount of time to wait for the next request, and if zero the value of `ReadTimeout` is used [1].", Supported},
		{"adjacent paragraphs", "`Shutdown` closes idle connections first, and the caller of Shutdown should separately notify hijacked long-lived connections [1].", Supported},
		{"two markers, two sources", "`Shutdown` waits indefinitely for connections to return to idle [1], while `NotifyContext` returns a context marked done when one of the listed signals arrives [2].", Supported},
		{"two markers, the second part false", "`Shutdown` waits indefinitely for connections to return to idle [1], while `NotifyContext` immediately closes all active listeners and idle connections [2].", Unsupported},
		{"numbers in words", "`DefaultTransport` keeps at most forty idle connections and waits ninety seconds, retrying a dozen times [1].", Supported},
		// The number holds (else unsupported); "sets" and "minutes" are not in the passage.
		{"a time in other units", "`DefaultTransport` sets `IdleConnTimeout` to 1.5 minutes [1].", Weak},
		{"a wrong time in other units", "`DefaultTransport` sets `IdleConnTimeout` to 2 minutes [1].", Unsupported},
		{"a wrong number in words", "`DefaultTransport` keeps at most fifty idle connections [1].", Unsupported},
		{"a negation the passage lacks", "`Shutdown` closes hijacked connections such as WebSockets [1].", Contradicted},
		{"the passage's negation kept", "`Shutdown` does not close hijacked connections such as WebSockets [1].", Supported},
		{"cannot against can", "Once `Shutdown` has been called on a server, it can be reused for future calls to methods such as Serve [1].", Contradicted},
		{"one function's behaviour given to another", "`Close` gracefully shuts down the server without interrupting any active connections [1].", Weak},
		{"an absolute the passage lacks", "`Shutdown` always closes all open listeners first and then all idle connections [1].", Weak},
		{"a marked inference", "This suggests that WebSocket servers need their own shutdown signalling [1].", Inference},
		{"an inference in parentheses", "A server should notify WebSockets before calling `Shutdown` (inference from [1]).", Inference},
		{"a claim of absence", "The `net/http` documentation does not mention any default timeout for `Shutdown` [1].", Absence},
		{"no … is documented", "No ordering between hijacked connections is documented [1].", Absence},
	}
	for _, c := range cases {
		if got, p := verdictOf(t, c.claim); got != c.want {
			t.Errorf("%s: %q is %s (%s, score %.2f, passage %q), want %s", c.why, c.claim, got, p.Reason, p.Score, clip(p.Passage, 200), c.want)
		}
	}
}

// TestSwappedTerms checks that a claim restating a sentence with two of
// its terms exchanged is never supported.
func TestSwappedTerms(t *testing.T) {
	doc := Document{Refs: []string{"https://go.dev/ref/mem"}, Title: "The Go Memory Model", Read: true,
		Text: "The kth receive from a channel with capacity C is synchronized before the completion of the k+Cth send on that channel.\n\n" +
			"For many simple use cases, users will be better off using channels than a Cond (Broadcast corresponds to closing a channel, and Signal corresponds to sending on a channel).\n"}
	for claim, want := range map[string]Verdict{
		"The kth send on a channel with capacity C is synchronized before the completion of the k+Cth receive from that channel [1].": Contradicted,
		"The kth receive from a channel with capacity C is synchronized before the completion of the k+Cth send on it [1].":           Supported,
		"`Broadcast` corresponds to sending on a channel, and `Signal` corresponds to closing a channel [1].":                         Contradicted,
		"`Broadcast` corresponds to closing a channel, and `Signal` corresponds to sending on a channel [1].":                         Supported,
	} {
		res := Check(claim+"\n\n## Sources\n[1] m — https://go.dev/ref/mem\n", []Document{doc})
		if got := res.Claims[0].Verdict; got != want {
			t.Errorf("%q is %s (%s), want %s", claim, got, res.Pairs[0].Reason, want)
		}
	}
}

// TestParts checks that a claim with markers in two places is checked in
// two parts, each against its own source, and that Recount keeps the
// gravest part.
func TestParts(t *testing.T) {
	report := "`Shutdown` waits indefinitely for connections to return to idle [1], while `NotifyContext` returns a copy of the parent context [2].\n\n" +
		"## Sources\n[1] h — https://pkg.go.dev/net/http\n[2] s — https://pkg.go.dev/os/signal\n"
	res := Check(report, []Document{httpDoc, signalDoc})
	if len(res.Pairs) != 2 || res.Pairs[0].Part != 0 || res.Pairs[1].Part != 1 || res.Claims[0].Verdict != Supported {
		t.Fatalf("pairs %+v claims %+v, want two supported parts", res.Pairs, res.Claims)
	}
	if !strings.HasPrefix(res.Pairs[1].Text, "while `NotifyContext`") || strings.Contains(res.Pairs[0].Text, "NotifyContext") {
		t.Errorf("parts %q and %q, want the text before [1], then the text from [1] to [2]", res.Pairs[0].Text, res.Pairs[1].Text)
	}
	res.Pairs[1].Verdict = Contradicted
	res.Recount()
	if res.Claims[0].Verdict != Contradicted || res.Counts.Contradicted != 1 {
		t.Errorf("after a part is contradicted: claim %s, counts %+v; want contradicted", res.Claims[0].Verdict, res.Counts)
	}
}

// TestPassages checks that a pair keeps up to three bounded passages, best
// first, the first being Passage.
func TestPassages(t *testing.T) {
	_, p := verdictOf(t, "`Shutdown` closes all open listeners and all idle connections [1].")
	if len(p.Passages) == 0 || len(p.Passages) > maxPassages || p.Passages[0] != p.Passage {
		t.Fatalf("passages %q, want one to three, the first %q", p.Passages, p.Passage)
	}
	for _, ps := range p.Passages {
		if utf8.RuneCountInString(ps) > maxPassage {
			t.Errorf("a passage of %d characters, want at most %d", utf8.RuneCountInString(ps), maxPassage)
		}
	}
}

// TestFlagVerdicts checks that Flag names the verdict it marks and leaves
// inferences, claims of absence and weak claims alone.
func TestFlagVerdicts(t *testing.T) {
	report := "- `Shutdown` closes hijacked connections such as WebSockets [1].\n- This suggests servers need a hook [1].\n" +
		"- The docs do not mention a default timeout [1].\n\n## Sources\n[1] h — https://pkg.go.dev/net/http\n"
	res := Check(report, []Document{httpDoc})
	got := Flag(report, res)
	want := strings.Replace(report, "WebSockets [1].", "WebSockets [1]. ⚠ contradicted", 1)
	if got != want {
		t.Fatalf("flagged:\n%s\nwant:\n%s", got, want)
	}
	if c := res.Counts; c.Contradicted != 1 || c.Inference != 1 || c.Absence != 1 || c.Claims != 3 {
		t.Errorf("counts %+v, want one contradicted, one inference, one absence", c)
	}
	if again := Check(got, []Document{httpDoc}); again.Counts != res.Counts {
		t.Errorf("counts of the flagged report %+v, want %+v", again.Counts, res.Counts)
	}
}

// TestNumbers checks numbers read in digits and in words.
func TestNumbers(t *testing.T) {
	for text, want := range map[string]string{
		"forty": "40", "two hundred": "200", "a dozen": "12", "twenty-five": "25", "half": "0.5", "1,024": "1024",
		"three thousand and five": "3005",
	} {
		got := numbersOf(text, true)
		if len(got) != 1 || got[0].digits != want {
			t.Errorf("numbersOf(%q) = %+v, want %s", text, got, want)
		}
	}
	for text, want := range map[string]string{"one minute": "dur:60000", "500ms": "dur:500", "90 * time.Second": "dur:90000", "half a second": "dur:500"} {
		got := numbersOf(text, false)
		if len(got) != 1 || got[0].duration != want {
			t.Errorf("numbersOf(%q) = %+v, want duration %s", text, got, want)
		}
	}
	if got := numbersOf("one of them uses HTTP2 and riscv64", false); len(got) != 0 {
		t.Errorf("numbers of a pronoun and identifiers = %+v, want none", got)
	}
}

// TestKinds checks which claims are inferences or claims of absence, and
// that claims of behaviour worded with a denial are neither.
func TestKinds(t *testing.T) {
	for claim, want := range map[string]Verdict{
		"I infer that the caller must drain the channel.":                    Inference,
		"Presumably the default is kept for compatibility.":                  Inference,
		"It follows that a second call blocks.":                              Inference,
		"The server is likely to close idle connections first.":              Inference,
		"The guide gives no default for the timeout.":                        Absence,
		"Nothing in the documentation mentions comments in JSON.":            Absence,
		"The docs do not specify an order.":                                  Absence,
		"The package says nothing about retries.":                            Absence,
		"`Reset` has no effect on a stopped timer.":                          "",
		"`Shutdown` does not close hijacked connections.":                    "",
		"If the caller does not specify a timeout, there is none.":           "",
		"A request whose source has no body is retried.":                     "",
		"Handlers should not modify the provided Request except to read it.": "",
	} {
		if got := kind(claim); got != want {
			t.Errorf("kind(%q) = %q, want %q", claim, got, want)
		}
	}
}
