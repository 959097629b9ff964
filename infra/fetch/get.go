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
	"github.com/gbresearch/gb/jobs/doctext"
)

const (
	kindHTML = doctext.FormatHTML
	kindText = doctext.FormatText
)

// readableTypes says what fetch reads, in its errors.
const readableTypes = "HTML, PDF, DOCX, PPTX, XLSX, CSV, plain text, Markdown, JSON, XML"

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
	if mediaType, _, _ := mime.ParseMediaType(header); header != "" && !doctext.MayRead(header) {
		page.ContentType = strings.ToLower(mediaType)
		return page, unreadable(page.URL, page.ContentType) // refused before its body is read
	}
	body, err := f.read(resp.Body, f.maxDocBytes)
	page.Bytes = len(body)
	if err != nil {
		return page, fmt.Errorf("fetch %s: %w", page.URL, err)
	}
	mediaType, kind := contentType(header, body, resp.Request.URL.Path)
	page.ContentType = mediaType
	if kind == "" {
		return page, unreadable(page.URL, mediaType)
	}
	if (kind == kindHTML || kind == kindText || kind == doctext.FormatMarkdown) && int64(len(body)) > f.maxBytes {
		return page, fmt.Errorf("fetch %s: the body is larger than the %d-byte cap", page.URL, f.maxBytes)
	}
	e, err := extractKind(ctx, body, kind, header, resp.Request.URL)
	if err != nil {
		return page, fmt.Errorf("fetch %s: %w", page.URL, err)
	}
	page.Title, page.Text, page.PageChars = e.Title, e.Text, e.PageChars
	if frag := cmp.Or(resp.Request.URL.Fragment, u.Fragment); frag != "" {
		page.Fragment = &jobs.Fragment{ID: frag}
		page.Fragment.Offset, page.Fragment.Heading, page.Fragment.Found = e.Locate(frag)
	}
	return page, nil
}

func unreadable(url, mediaType string) error {
	return fmt.Errorf("fetch %s: content type %q is not one fetch reads (%s)", url, mediaType, readableTypes)
}

// read reads the body up to max bytes.
func (f *Fetcher) read(body io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return b, fmt.Errorf("reading the body: %w", err)
	}
	if int64(len(b)) > max {
		return b[:max], fmt.Errorf("the body is larger than the %d-byte cap", max)
	}
	return b, nil
}

// contentType is the media type of the answer (sniffed when the header
// gives none) and the format it is read as (doctext.Sniff: the bytes of a
// PDF or an Office zip decide, then the header, then the URL's path).
func contentType(header string, body []byte, urlPath string) (string, string) {
	mediaType, _, err := mime.ParseMediaType(header)
	if (header == "" || err != nil) && body != nil {
		mediaType, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	mediaType = strings.ToLower(mediaType)
	return mediaType, doctext.Sniff(body, header, urlPath)
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
