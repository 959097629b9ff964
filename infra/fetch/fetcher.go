package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// Defaults of the zero fields of Config.
const (
	// TimeoutDefault bounds one fetch, redirects and body included.
	TimeoutDefault = 20 * time.Second
	// MaxBytesDefault caps the body of an HTML or text page read (after
	// decompression).
	MaxBytesDefault = 5 << 20
	// MaxDocBytesDefault caps the body of a document (PDF, Office): a
	// paper or a manual is larger than a page.
	MaxDocBytesDefault = 20 << 20
	// MaxRedirects is how many redirects one fetch follows.
	MaxRedirects = 5
	// UserAgentDefault is sent with every request.
	UserAgentDefault = "gb-research/1.0 (+https://github.com/gbresearch/gb)"
)

// Resolver resolves host names; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc dials a checked "ip:port" address.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Config configures a Fetcher. Zero fields take the defaults.
type Config struct {
	Timeout  time.Duration
	MaxBytes int64
	// MaxDocBytes caps a document's body (default MaxDocBytesDefault,
	// and never below MaxBytes).
	MaxDocBytes int64
	// Ports are the ports public addresses may be fetched on (default 80
	// and 443).
	Ports []uint16
	// Allow lets networks and ports through whatever they are (tests,
	// local development).
	Allow []Rule
	// Resolver resolves hosts (default net.DefaultResolver).
	Resolver Resolver
	// Dial connects to an address the guard checked (default a
	// net.Dialer whose Control hook checks it again).
	Dial      DialFunc
	UserAgent string
	// ArxivBase, GitHubAPIBase and GitHubRawBase are where arXiv papers
	// and GitHub repositories and files are read from (the defaults:
	// ArxivBaseDefault, …); tests point them at local servers.
	ArxivBase, GitHubAPIBase, GitHubRawBase string
	// Logger gets the allow-list warning; nil means slog.Default().
	Logger *slog.Logger
}

// Fetcher fetches pages through the guard. It is safe for concurrent use.
type Fetcher struct {
	client      *http.Client
	timeout     time.Duration
	maxBytes    int64
	maxDocBytes int64
	agent       string
	// arxivBase, ghAPI and ghRaw are Config's ArxivBase, GitHubAPIBase
	// and GitHubRawBase.
	arxivBase, ghAPI, ghRaw string
}

var _ jobs.Fetcher = (*Fetcher)(nil)

// FromEnv builds a Fetcher from GB_FETCH_ALLOW and GB_FETCH_PORTS read
// through getenv (os.Getenv when nil); an error names the variable.
func FromEnv(getenv func(string) string, logger *slog.Logger) (*Fetcher, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	allow, err := ParseAllow(getenv(EnvAllow))
	if err != nil {
		return nil, fmt.Errorf("fetch config: %w", err)
	}
	ports, err := ParsePorts(getenv(EnvPorts))
	if err != nil {
		return nil, fmt.Errorf("fetch config: %w", err)
	}
	return New(Config{Allow: allow, Ports: ports, Logger: logger}), nil
}

// New returns a Fetcher for cfg, logging a warning when an allow-list is on.
func New(cfg Config) *Fetcher {
	warnAllow(cfg, "fetch: the allow-list is on: pages may be fetched from these networks and ports whatever they are")
	return &Fetcher{
		client:      &http.Client{Transport: NewTransport(cfg), CheckRedirect: checkRedirect},
		timeout:     cmp.Or(cfg.Timeout, TimeoutDefault),
		maxBytes:    cmp.Or(cfg.MaxBytes, MaxBytesDefault),
		maxDocBytes: max(cmp.Or(cfg.MaxDocBytes, MaxDocBytesDefault), cmp.Or(cfg.MaxBytes, MaxBytesDefault)),
		agent:       cmp.Or(cfg.UserAgent, UserAgentDefault),
		arxivBase:   strings.TrimSuffix(cmp.Or(cfg.ArxivBase, ArxivBaseDefault), "/"),
		ghAPI:       strings.TrimSuffix(cmp.Or(cfg.GitHubAPIBase, GitHubAPIBaseDefault), "/"),
		ghRaw:       strings.TrimSuffix(cmp.Or(cfg.GitHubRawBase, GitHubRawBaseDefault), "/"),
	}
}

// checkRedirect follows at most MaxRedirects redirects, each to a URL the
// guard accepts before any connection (its address is checked at dial).
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return refused(req.URL.Redacted(), "more than %d redirects", MaxRedirects)
	}
	return checkURL(req.URL)
}

// checkURL refuses what no dial should be tried for: another scheme than
// http or https, credentials, no host, or a host in a numeric form that is
// not a plain IP address (decimal, octal or hex IPv4 forms).
func checkURL(u *url.URL) error {
	target := u.Redacted()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return refused(target, "scheme %q is not http or https", u.Scheme)
	case u.User != nil:
		return refused(target, "the URL holds credentials (user info), which fetch never sends")
	case u.Hostname() == "":
		return refused(target, "the URL has no host")
	}
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err != nil && looksNumeric(host) {
		return refused(target, "host %q is an IP address in a non-standard form", host)
	}
	return nil
}

// looksNumeric reports whether host is made only of digits, dots and hex
// markers, as the decimal (2130706433), octal (0177.0.0.1) and hex
// (0x7f.1) forms of IPv4 that some resolvers accept.
func looksNumeric(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" {
			return false
		}
		hex := strings.HasPrefix(l, "0x")
		digits := strings.TrimPrefix(l, "0x")
		for _, r := range digits {
			if !(r >= '0' && r <= '9' || hex && r >= 'a' && r <= 'f') {
				return false
			}
		}
	}
	return true
}

// Fetch implements jobs.Fetcher: it GETs rawURL through the guard and
// returns its readable text. An arXiv paper's URL reads the paper, a
// GitHub repository's its README and files, a GitHub file's the raw file
// (named.go). Errors say what happened.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (jobs.Page, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return jobs.Page{}, fmt.Errorf("fetch: %q is not a URL: %w", rawURL, err)
	}
	if err := checkURL(u); err != nil {
		return jobs.Page{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	page, named, err := f.named(ctx, u)
	if !named {
		page, err = f.get(ctx, u)
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrRefused) {
		return page, fmt.Errorf("fetch %s: timed out after %s: %w", u.Redacted(), f.timeout, err)
	}
	return page, err
}
