package providerbench

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gbresearch/gb/infra/fetch"
)

// pages serves numbered plain-text pages of a set size on this machine:
// /page/N, each with words of its own, so that no two pages share a prefix.
type pages struct {
	srv  *httptest.Server
	size int
}

// newPages starts a page server whose pages are size characters long.
func newPages(size int) *pages {
	p := &pages{size: size}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/page/"))
		if err != nil || n < 0 {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(PageText(n, size)))
	}))
	return p
}

// URL is the address of page n.
func (p *pages) URL(n int) string { return fmt.Sprintf("%s/page/%d", p.srv.URL, n) }

// Close stops the server.
func (p *pages) Close() { p.srv.Close() }

// fetcher reads the pages through the real fetcher, with the page server's
// address let through its guard.
func (p *pages) fetcher() (*fetch.Fetcher, error) {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(p.srv.URL, "http://"))
	if err != nil {
		return nil, fmt.Errorf("error reading the page server's address: %w", err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil, fmt.Errorf("error reading the page server's address: %w", err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("error reading the page server's port: %w", err)
	}
	rule := fetch.Rule{Prefix: netip.PrefixFrom(ip, ip.BitLen()), Low: uint16(n), Top: uint16(n)}
	return fetch.New(fetch.Config{Allow: []fetch.Rule{rule}}), nil
}

// PageText is page n: size characters of sentences that name the page.
func PageText(n, size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "Page %d, finding %d: tidal stream output at site %d rose by %d percent in year %d. ",
			n, i, (n*31+i)%97, (n*7+i*3)%50, 2000+(n+i)%26)
	}
	return b.String()[:size]
}
