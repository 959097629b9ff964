// Package fetch is the jobs.Fetcher that reads web pages for the agents'
// fetch tool, refusing what it must not reach, and reduces them to text.
//
// The address is checked where the connection is made: the transport's
// dialer resolves the host itself and dials only a checked IP, so DNS
// answers and every redirect (at most MaxRedirects) pass the same guard
// (guard.go). Refused are loopback, private (RFC 1918, CGNAT), link-local
// (the cloud metadata address 169.254.169.254 among them), unique-local,
// unspecified, multicast, broadcast and other reserved ranges, IPv4-mapped
// and other IPv6 forms that embed a refused IPv4, ports other than 80 and
// 443, schemes other than http and https, and URLs holding credentials. An
// allow-list of networks and ports (GB_FETCH_ALLOW, for tests and local
// development) lets chosen addresses through; it is off by default and
// logged as a warning when on.
//
// WebhookClient posts the webhooks of ended researches (jobs.WebhookSender)
// through the same guard, following no redirect; NewTransport is the
// guarded transport both use.
//
// Bodies are capped (MaxBytesDefault), fetches are timed out
// (TimeoutDefault), and only readable content types are read. HTML is
// reduced to its text (extract.go): the article
// codeberg.org/readeck/go-readability/v2 finds when it keeps every
// section of the content and most of the text (sections.go), else the
// page's whole text less its navigation (clutter.go), both rendered with
// headings as "## Heading" lines and the places of the elements' ids, so
// that a URL's #fragment is located (render.go, anchor.go); plain text,
// Markdown and JSON are kept as they are. Documents (PDF, DOCX, PPTX,
// XLSX, CSV; found by their bytes, type or path) are read by jobs/doctext,
// within its limits, their pages marked in the text; their bodies are
// capped at MaxDocBytesDefault. docs/extraction.md and docs/documents.md
// measure it. Slice pages such text by characters for the tool.
//
// It may import jobs and jobs/doctext only.
package fetch
