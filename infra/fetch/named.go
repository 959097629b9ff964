package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/gbresearch/gb/jobs"
)

// Where papers and code are read from; Config's ArxivBase, GitHubAPIBase
// and GitHubRawBase replace them (tests serve the same shapes locally).
const (
	ArxivBaseDefault     = "https://arxiv.org"
	GitHubAPIBaseDefault = "https://api.github.com"
	GitHubRawBaseDefault = "https://raw.githubusercontent.com"
)

var (
	arxivIDRE = regexp.MustCompile(`^(?:\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?$`)
	// maxListedFiles bounds a repository's file list.
	maxListedFiles = 2000
)

// ArxivID is the arXiv id a URL or text names ("arXiv:2401.01234",
// "https://arxiv.org/abs/2401.01234v2", ".../pdf/…", ".../html/…"), or "".
func ArxivID(s string) string {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(strings.ToLower(s), "arxiv:"); ok {
		if id := s[len(s)-len(rest):]; arxivIDRE.MatchString(id) {
			return id
		}
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	switch strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.") {
	case "arxiv.org", "export.arxiv.org":
	default:
		return ""
	}
	for _, p := range []string{"/abs/", "/pdf/", "/html/"} {
		if id, ok := strings.CutPrefix(u.Path, p); ok {
			id = strings.TrimSuffix(strings.TrimSuffix(id, "/"), ".pdf")
			if arxivIDRE.MatchString(id) {
				return id
			}
		}
	}
	return ""
}

// named reads a URL that names a paper or code: an arXiv paper (its HTML
// version when its abstract page links one, else its PDF, with its title,
// authors and date), a GitHub repository (its README and its files) or a
// GitHub file (the raw file). ok is false for any other URL. Every
// request goes through get: the guard and the limits.
func (f *Fetcher) named(ctx context.Context, u *url.URL) (jobs.Page, bool, error) {
	if id := ArxivID(u.String()); id != "" {
		p, err := f.arxiv(ctx, id)
		return p, true, err
	}
	if strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.") != "github.com" {
		return jobs.Page{}, false, nil
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) == 2:
		p, err := f.githubRepo(ctx, parts[0], strings.TrimSuffix(parts[1], ".git"))
		return p, true, err
	case len(parts) >= 5 && (parts[2] == "blob" || parts[2] == "raw"):
		raw, err := f.parse(f.ghRaw + "/" + strings.Join(append(parts[:2:2], parts[3:]...), "/"))
		if err != nil {
			return jobs.Page{}, true, err
		}
		p, err := f.get(ctx, raw)
		if err == nil {
			p.Title = cmpOr(p.Title, strings.Join(parts[:2], "/")+": "+strings.Join(parts[4:], "/"))
		}
		return p, true, err
	}
	return jobs.Page{}, false, nil
}

func (f *Fetcher) parse(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("fetch: %q is not a URL: %w", raw, err)
	}
	return u, checkURL(u)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// arxiv reads paper id: its abstract page for the title, authors, date
// and the link to its HTML version, then that version, else the PDF.
func (f *Fetcher) arxiv(ctx context.Context, id string) (jobs.Page, error) {
	abs, err := f.parse(f.arxivBase + "/abs/" + id)
	if err != nil {
		return jobs.Page{}, err
	}
	body, err := f.getRaw(ctx, abs)
	if err != nil {
		return jobs.Page{}, err
	}
	meta := arxivMeta(body)
	var page jobs.Page
	if meta.html != "" {
		if hu, err := abs.Parse(meta.html); err == nil && checkURL(hu) == nil {
			page, err = f.get(ctx, hu)
			if err != nil {
				page = jobs.Page{}
			}
		}
	}
	if page.Text == "" {
		pu, err := f.parse(f.arxivBase + "/pdf/" + id)
		if err != nil {
			return jobs.Page{}, err
		}
		if page, err = f.get(ctx, pu); err != nil {
			return page, err
		}
	}
	page.Title = cmpOr(meta.title, page.Title)
	head := "arXiv:" + id
	if len(meta.authors) > 0 {
		head += "\nAuthors: " + strings.Join(meta.authors, "; ")
	}
	if meta.date != "" {
		head += "\nDate: " + meta.date
	}
	if !strings.HasPrefix(page.Text, "[page 1]") {
		page.Text = head + "\n\n" + page.Text
	} else {
		// A PDF's text starts at its first page; the paper's facts come
		// after it, so that its pages stay the text's own.
		page.Text += "\n\n" + head
	}
	if page.PageChars > 0 {
		page.PageChars = len([]rune(page.Text))
	}
	return page, nil
}

type paperMeta struct {
	title, date, html string
	authors           []string
}

// arxivMeta reads an abstract page's citation_* meta tags and its link to
// the HTML version (an <a> to /html/…).
func arxivMeta(body []byte) paperMeta {
	var m paperMeta
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		return m
	}
	walk(doc, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		attr := func(k string) string {
			for _, a := range n.Attr {
				if a.Key == k {
					return a.Val
				}
			}
			return ""
		}
		switch n.DataAtom {
		case atom.Meta:
			c := strings.Join(strings.Fields(attr("content")), " ")
			switch attr("name") {
			case "citation_title":
				m.title = c
			case "citation_author":
				m.authors = append(m.authors, c)
			case "citation_date", "citation_online_date":
				if m.date == "" {
					m.date = strings.ReplaceAll(c, "/", "-")
				}
			}
		case atom.A:
			if h := attr("href"); m.html == "" && strings.Contains(h, "/html/") {
				m.html = h
			}
		}
		return true
	})
	return m
}

// getRaw fetches u through the guard and returns its body.
func (f *Fetcher) getRaw(ctx context.Context, u *url.URL) ([]byte, error) {
	return f.getBody(ctx, u, "text/html")
}

// getBody GETs u through the guard with an Accept header and returns its
// body, within the page cap.
func (f *Fetcher) getBody(ctx context.Context, u *url.URL, accept string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	req.Header.Set("User-Agent", f.agent)
	req.Header.Set("Accept", accept)
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, unwrapURLError(u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("fetch %s: the server answered %s", resp.Request.URL.Redacted(), resp.Status)
	}
	b, err := f.read(resp.Body, f.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", resp.Request.URL.Redacted(), err)
	}
	return b, nil
}

// githubRepo reads a repository: its README (raw) and the list of its
// files (the git tree of its default branch), at most maxListedFiles.
func (f *Fetcher) githubRepo(ctx context.Context, owner, repo string) (jobs.Page, error) {
	base := f.ghAPI + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo)
	ru, err := f.parse(base + "/readme")
	if err != nil {
		return jobs.Page{}, err
	}
	readme, err := f.getBody(ctx, ru, "application/vnd.github.raw")
	if err != nil {
		return jobs.Page{URL: "https://github.com/" + owner + "/" + repo}, err
	}
	tu, err := f.parse(base + "/git/trees/HEAD?recursive=1")
	if err != nil {
		return jobs.Page{}, err
	}
	var tree struct {
		Tree []struct {
			Path string `json:"path"`
			Type string `json:"type"`
		} `json:"tree"`
		Truncated bool `json:"truncated"`
	}
	var files []string
	if b, err := f.getBody(ctx, tu, "application/vnd.github+json"); err == nil && json.Unmarshal(b, &tree) == nil {
		for _, e := range tree.Tree {
			if e.Type == "blob" {
				files = append(files, e.Path)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s/%s\n\n## README\n\n%s\n\n## Files\n\n", owner, repo, strings.TrimSpace(toUTF8(readme, "")))
	for i, p := range files {
		if i == maxListedFiles {
			fmt.Fprintf(&b, "[%d more files not listed]\n", len(files)-i)
			break
		}
		b.WriteString("- " + p + "\n")
	}
	if tree.Truncated {
		b.WriteString("[the repository's tree was cut short by GitHub]\n")
	}
	if len(files) == 0 {
		b.WriteString("[no file list could be read]\n")
	}
	return jobs.Page{URL: "https://github.com/" + owner + "/" + repo, Title: owner + "/" + repo, Text: b.String(),
		ContentType: "text/markdown", Status: 200, Bytes: len(readme), FetchedAt: time.Now().UTC()}, nil
}
