package jobs

import (
	"context"
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file is what the web tools need of the world: a search provider and
// a page fetcher, implemented in infra (infra/search, infra/fetch). Their
// errors are results the model reads: the web is not the service's
// infrastructure, so no failure of it fails a step.

// SearchResult is one result of a web search.
type SearchResult struct {
	Title   string
	URL     string
	Snippet string
	// Date is when the page was published, as the provider gives it ("" when
	// it gives none).
	Date string
}

// Searcher searches the web.
type Searcher interface {
	// Name names the provider, for logs and the sources.
	Name() string
	// Search returns at most max results for query, and the usage of any
	// model call the search made (counted on the run that searched). Its
	// error text is shown to the model: it must say what went wrong.
	Search(ctx context.Context, query string, max int) ([]SearchResult, llm.Usage, error)
}

// Page is a fetched page, reduced to its readable text.
type Page struct {
	// URL is the final address, after redirects.
	URL   string
	Title string
	// Text is the readable text: the main text of an HTML page, its
	// headings kept as "## Heading" lines, or a plain text, Markdown or
	// JSON body as it was.
	Text string
	// PageChars is the length in characters of the page's whole visible
	// text, which Text was extracted from (an HTML page's body less its
	// scripts, styles and navigation); 0 when Text is the body as served.
	PageChars int
	// Fragment is where the URL's #fragment points in Text; nil when the
	// URL has none.
	Fragment    *Fragment
	ContentType string
	Status      int
	// Bytes is the size of the body as received.
	Bytes int
	// FetchedAt is when the page was fetched.
	FetchedAt time.Time
}

// Fragment is where a URL's #fragment points in a page's text.
type Fragment struct {
	// ID is the fragment, without its "#".
	ID string
	// Found reports whether the page has an element of that id (or a
	// heading of that name); Offset and Heading are set only then.
	Found bool
	// Offset is the character of Text where the element's text starts.
	Offset int
	// Heading is the heading line ("## Heading") of the section the
	// element falls in; "" before the first heading.
	Heading string
}

// Fetcher fetches pages, refusing what it must not reach. Its error text
// is shown to the model: it must say what happened (a refused address, a
// status, a timeout, a type it cannot read).
type Fetcher interface {
	// Fetch fetches url; a #fragment in it is not sent but located in
	// the page (Page.Fragment).
	Fetch(ctx context.Context, url string) (Page, error)
}
