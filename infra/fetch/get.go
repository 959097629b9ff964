package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// readable lists the content types that are read, by kind of extraction.
var readable = map[string]string{
	"text/html":             kindHTML,
	"application/xhtml+xml": kindHTML,
	"text/plain":            kindText,
	"text/markdown":         kindText,
	"text/x-markdown":       kindText,
	"text/csv":              kindText,
	"text/xml":              kindText,
	"application/xml":       kindText,
	"application/json":      kindText,
	"application/ld+json":   kindText,
	"application/rss+xml":   kindText,
	"application/atom+xml":  kindText,
}

const (
	kindHTML = "html"
	kindText = "text"
)

// kindOf is how a content type is read, or "" when it is not.
func kindOf(mediaType string) string {
	if k, ok := readable[mediaType]; ok {
		return k
	}
	if strings.HasSuffix(mediaType, "+json") {
		return kindText
	}
	return ""
}

// get makes the request and reads the answer into a page.
func (f *Fetcher) get(ctx context.Context, u *url.URL) (jobs.Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return jobs.Page{}, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	req.Header.Set("User-Agent", f.agent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,application/json;q=0.8,*/*;q=0.1")
	resp, err := f.client.Do(req)
	if err != nil {
		return jobs.Page{}, unwrapURLError(u, err)
	}
	defer resp.Body.Close()
	page := jobs.Page{URL: resp.Request.URL.String(), Status: resp.StatusCode, FetchedAt: time.Now().UTC()}
	if resp.StatusCode/100 != 2 {
		return page, fmt.Errorf("fetch %s: the server answered %s", page.URL, resp.Status)
	}
	header := resp.Header.Get("Content-Type")
	if mediaType, kind := contentType(header, nil); header != "" && kind == "" {
		page.ContentType = mediaType
		return page, unreadable(page.URL, mediaType) // refused before its body is read
	}
	body, err := f.read(resp.Body)
	page.Bytes = len(body)
	if err != nil {
		return page, fmt.Errorf("fetch %s: %w", page.URL, err)
	}
	mediaType, kind := contentType(header, body)
	page.ContentType = mediaType
	if kind == "" {
		return page, unreadable(page.URL, mediaType)
	}
	e := extract(body, kind, header, resp.Request.URL)
	page.Title, page.Text, page.PageChars = e.Title, e.Text, e.PageChars
	if frag := cmp.Or(resp.Request.URL.Fragment, u.Fragment); frag != "" {
		page.Fragment = &jobs.Fragment{ID: frag}
		page.Fragment.Offset, page.Fragment.Heading, page.Fragment.Found = e.Locate(frag)
	}
	return page, nil
}

func unreadable(url, mediaType string) error {
	return fmt.Errorf("fetch %s: content type %q is not one fetch reads (HTML, plain text, Markdown, JSON, XML)", url, mediaType)
}

// read reads the body up to the cap.
func (f *Fetcher) read(body io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, f.maxBytes+1))
	if err != nil {
		return b, fmt.Errorf("reading the body: %w", err)
	}
	if int64(len(b)) > f.maxBytes {
		return b[:f.maxBytes], fmt.Errorf("the body is larger than the %d-byte cap", f.maxBytes)
	}
	return b, nil
}

// contentType is the media type of the answer (sniffed when the header
// gives none) and how it is read.
func contentType(header string, body []byte) (string, string) {
	mediaType, _, err := mime.ParseMediaType(header)
	if (header == "" || err != nil) && body != nil {
		mediaType, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	mediaType = strings.ToLower(mediaType)
	return mediaType, kindOf(mediaType)
}

// unwrapURLError keeps the guard's refusal as the error (http.Client wraps
// it in a *url.Error that repeats the URL).
func unwrapURLError(u *url.URL, err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("fetch %s: %w", u.Redacted(), err)
}
