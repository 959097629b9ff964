package providerbench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gbresearch/gb/infra/openai/openaifake"
)

// This file holds the brain of a research whose writer quotes only what is
// still in its prompt, and a watch on what each request shows of the
// results before it.

// pageNumber reads the number of a page from its address.
var pageNumber = regexp.MustCompile(`/page/(\d+)$`)

// inViewBrain reads perStep new pages at every step and, when it may no
// longer call tools, writes a report that cites every page the request
// mentions, a finding of each: a sentence of that page still in its
// prompt, quoted whole, when one is (a result shown whole, a stub's
// kept passages, a note); otherwise what a writer recalls of a page it no
// longer sees, a finding with numbers it cannot check, which are not the
// page's. w, when not nil, watches every request.
func inViewBrain(perStep int, w *watch) func(*pages) openaifake.Brain {
	return func(p *pages) openaifake.Brain {
		return func(req *openaifake.Request) openaifake.Answer {
			w.see(req)
			if !mayCall(req) {
				return inViewReport(req)
			}
			k := turns(req)
			var a openaifake.Answer
			for i := 1; i <= perStep; i++ {
				n := k*perStep + i
				a.ToolCalls = append(a.ToolCalls, openaifake.ToolCall{ID: fmt.Sprintf("call_read_%d", n), Name: "fetch",
					Arguments: fmt.Sprintf(`{"url":%q}`, p.URL(n))})
			}
			return a
		}
	}
}

// inViewReport is the report of inViewBrain.
func inViewReport(req *openaifake.Request) openaifake.Answer {
	var text strings.Builder
	for _, m := range req.Messages {
		text.WriteString(m.Content)
		text.WriteString("\n")
	}
	prompt := text.String()
	var claims, sources strings.Builder
	fmt.Fprintf(&claims, "Report on %s.\n\n", task(req))
	seen := map[string]bool{}
	k := 0
	for _, u := range pageURL.FindAllString(prompt, -1) {
		if seen[u] {
			continue
		}
		seen[u] = true
		k++
		n, _ := strconv.Atoi(pageNumber.FindStringSubmatch(u)[1])
		fmt.Fprintf(&claims, "- %s [%d]\n", findingOf(prompt, n), k)
		fmt.Fprintf(&sources, "[%d] %s\n", k, u)
	}
	return openaifake.Answer{Content: claims.String() + "\nSources:\n" + sources.String()}
}

// findingOf is a finding of page n: the first sentence of the page in the
// prompt, or, when none is left in it, a recalled one whose figures are
// not the page's (no page has a site over 96, a rise of 50 percent or
// more, or a year past 2025).
func findingOf(prompt string, n int) string {
	lead := fmt.Sprintf("Page %d, finding ", n)
	for from := 0; ; {
		i := strings.Index(prompt[from:], lead)
		if i < 0 {
			break
		}
		start := from + i
		end := strings.IndexByte(prompt[start:], '.')
		if end > 0 && !strings.ContainsAny(prompt[start:start+end], "\n[") {
			return prompt[start : start+end+1]
		}
		from = start + len(lead)
	}
	return fmt.Sprintf("Page %d, finding 0: tidal stream output at site 98 rose by 61 percent in year 2031.", n)
}

// watch counts what the requests of a research show of the results before
// them: results of the latest assistant message (not yet seen by the
// model) sent as a stub, and results sent whole after a request had
// stubbed them.
type watch struct {
	mu sync.Mutex
	// stubbed are the calls whose result a request sent as a stub.
	stubbed map[string]bool
	// UnseenStubbed counts results sent as a stub in the first request
	// after their step; Returned counts results sent whole after a stub.
	UnseenStubbed, Returned int
	// AllWhole counts the requests after a step of several results that
	// held all of them whole.
	AllWhole, Several int
}

// stubLead opens the stub that replaces a result (jobs/compact).
const stubLead = "[Earlier result not shown to save space: "

// see notes what req shows of its results.
func (w *watch) see(req *openaifake.Request) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stubbed == nil {
		w.stubbed = map[string]bool{}
	}
	last := -1
	for i, m := range req.Messages {
		if m.Role == "assistant" {
			last = i
		}
	}
	latest, whole := 0, 0
	for i, m := range req.Messages {
		if m.Role != "tool" {
			continue
		}
		stub := strings.HasPrefix(m.Content, stubLead)
		switch {
		case stub && i > last:
			w.UnseenStubbed++
		case !stub && w.stubbed[m.ToolCallID]:
			w.Returned++
		}
		if stub {
			w.stubbed[m.ToolCallID] = true
		}
		if i > last {
			latest++
			if !stub && !strings.Contains(m.Content, "[Cut to save space") {
				whole++
			}
		}
	}
	if latest > 1 {
		w.Several++
		if whole == latest {
			w.AllWhole++
		}
	}
}
