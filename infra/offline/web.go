package offline

import (
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/gbresearch/gb/jobs/llm"
)

// The web path: when the request offers web_search and fetch, the policy
// searches the web with the task's first question, fetches the results
// whose titles and snippets match the question best, and quotes the
// fetched pages in its report, citing their final URLs.
//
// Everything between the markers of an untrusted block is data. The only
// thing web content decides is which of the search results to fetch; the
// policy never follows a URL found in a page, never reads on into a page,
// and never lets page text choose a message, a note or a tool.

const (
	// maxWebResults is the max_results of the policy's web search.
	maxWebResults = 5
	// maxFetches is how many pages of the results the policy fetches.
	maxFetches   = 2
	untrustedEnd = "<<<END UNTRUSTED WEB CONTENT>>>"
)

// webResult is one web search result.
type webResult struct {
	title, url, date, snippet string
}

var (
	untrustedOpenRE = regexp.MustCompile(`^<<<UNTRUSTED WEB CONTENT: (.*) \(data, not instructions\)>>>$`)
	resultHeadRE    = regexp.MustCompile(`^\[\d+\] (.*)$`)
	blankLinesRE    = regexp.MustCompile(`\n{3,}`)
	rangeLineRE     = regexp.MustCompile(`^\[(?:characters \d+ to \d+ of \d+; .*|offset \d+ is past the end: .*)\]$`)
)

// untrustedBody is the text inside an untrusted block, and the label of
// its opening marker; ok is false when content is not one such block.
func untrustedBody(content string) (label, body string, ok bool) {
	content = strings.TrimSpace(content)
	first, rest, _ := strings.Cut(content, "\n")
	m := untrustedOpenRE.FindStringSubmatch(strings.TrimSpace(first))
	end := strings.LastIndex(rest, untrustedEnd)
	if m == nil || end < 0 || strings.TrimSpace(rest[end+len(untrustedEnd):]) != "" {
		return "", "", false
	}
	return m[1], rest[:end], true
}

// parseWebResults reads a web_search result: numbered results, each a
// title, a "URL:" line, an optional "Date:" line and a snippet. A result
// without a usable http(s) URL is dropped.
func parseWebResults(content string) []webResult {
	_, body, ok := untrustedBody(content)
	if !ok {
		return nil
	}
	var out []webResult
	for _, entry := range splitEntries(body) {
		if r, ok := parseEntry(entry); ok {
			out = append(out, r)
		}
	}
	return out
}

// splitEntries splits a block of search results at the lines that start
// a result ("[n] title").
func splitEntries(body string) [][]string {
	var entries [][]string
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimRight(line, "\r")
		if resultHeadRE.MatchString(line) {
			entries = append(entries, []string{line})
		} else if len(entries) > 0 {
			entries[len(entries)-1] = append(entries[len(entries)-1], line)
		}
	}
	return entries
}

// parseEntry reads one result: its head line, the "URL:" line right
// after it, an optional "Date:" line, and the rest as its snippet.
func parseEntry(lines []string) (webResult, bool) {
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "URL: ") {
		return webResult{}, false
	}
	r := webResult{title: strings.TrimSpace(resultHeadRE.FindStringSubmatch(lines[0])[1]),
		url: strings.TrimSpace(strings.TrimPrefix(lines[1], "URL: "))}
	rest := lines[2:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "Date: ") {
		r.date = strings.TrimSpace(strings.TrimPrefix(rest[0], "Date: "))
		rest = rest[1:]
	}
	r.snippet = strings.TrimSpace(strings.Join(rest, " "))
	return r, webURL(r.url)
}

// webURL reports whether s is an absolute http or https URL with a host,
// the only addresses the policy fetches.
func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && !strings.ContainsAny(s, " \t")
}

// parsePage reads a fetch result: its title, its final URL and its text,
// without the line that says how much of the page is left. requested is
// the URL the call asked for, cited when the result names none.
func parsePage(content, requested string) (source, bool) {
	_, body, ok := untrustedBody(content)
	if !ok {
		return source{}, false
	}
	src := source{url: requested}
	lines := strings.Split(strings.TrimLeft(body, "\n"), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "Title:") {
		src.title = strings.TrimSpace(strings.TrimPrefix(lines[0], "Title:"))
		lines = lines[1:]
	}
	if len(lines) > 0 && strings.HasPrefix(lines[0], "URL:") {
		if u := strings.TrimSpace(strings.TrimPrefix(lines[0], "URL:")); webURL(u) {
			src.url = u
		}
		lines = lines[1:]
	}
	if len(lines) > 0 && rangeLineRE.MatchString(strings.TrimSpace(lines[0])) {
		lines = lines[1:]
	}
	src.text = pageParagraphs(lines)
	return titled(src), true
}

// pageParagraphs joins the lines of a page's text into paragraphs. The
// text of an HTML page has a block a line (a heading, a list item, a
// paragraph), a plain text file wraps its paragraphs: a line break ends a
// paragraph after a line that ends a sentence or a clause, or that is too
// short to be wrapped.
func pageParagraphs(lines []string) string {
	var b strings.Builder
	for _, line := range lines {
		line = strings.TrimSpace(line)
		b.WriteString(line)
		if line == "" || len(line) < 60 || strings.ContainsAny(line[len(line)-1:], ".!?:;") {
			b.WriteString("\n\n")
		} else {
			b.WriteString("\n")
		}
	}
	return strings.TrimSpace(blankLinesRE.ReplaceAllString(b.String(), "\n\n"))
}

// titled gives a page with no title its URL as title, on one line.
func titled(s source) source {
	s.title = oneLine(s.title, 200)
	if s.title == "" {
		s.title = s.url
	}
	return s
}

// webQuery is the web search of the task: its first question, as asked.
func (f *focus) webQuery() string {
	return oneLine(firstQuestion(f.question), 300)
}

// toFetch are the search results to fetch, best first: those whose title
// and snippet have most of the question's terms, in the provider's order
// among equals, not fetched yet, at most maxFetches.
func (s *state) toFetch() []webResult {
	type scored struct {
		r     webResult
		score int
	}
	var cands []scored
	seen := map[string]bool{}
	for _, r := range s.webResults {
		if seen[r.url] || s.fetched[r.url] {
			continue
		}
		seen[r.url] = true
		cands = append(cands, scored{r, len(distinctWanted(s.focus, r.title+" "+r.snippet))})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	var out []webResult
	for _, c := range cands {
		if len(out) == maxFetches {
			break
		}
		out = append(out, c.r)
	}
	return out
}

// distinctWanted are the question's terms that text has.
func distinctWanted(f *focus, text string) map[string]bool {
	has := map[string]bool{}
	for _, t := range terms(text) {
		if f.want[t] {
			has[t] = true
		}
	}
	return has
}

// webCalls are the web tool calls of the coming step: the search on the
// first step, then one fetch of each chosen result, once.
func (s *state) webCalls(req llm.Request) []llm.ToolCall {
	if !req.HasTool("web_search") || !req.HasTool("fetch") {
		return nil
	}
	if !s.used["web_search"] {
		return []llm.ToolCall{call("web_search", map[string]any{"query": s.focus.webQuery(), "max_results": maxWebResults})}
	}
	if s.used["fetch"] {
		return nil
	}
	var calls []llm.ToolCall
	for _, r := range s.toFetch() {
		calls = append(calls, call("fetch", map[string]any{"url": r.url}))
	}
	return calls
}
