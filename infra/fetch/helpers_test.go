package fetch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"testing"
)

// stubResolver answers from a table, and never asks a real DNS server.
type stubResolver map[string][]netip.Addr

func (r stubResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ips, ok := r[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// recordingDialer records every address it is asked for. It connects only
// to the loopback servers the test started, serves fake public hosts over
// in-memory pipes, and fails the test for any other address: a refused
// address reaching it means the guard let it through.
type recordingDialer struct {
	t      *testing.T
	mu     sync.Mutex
	asked  []string
	local  map[string]bool           // "127.0.0.1:port" of the test's servers
	piped  map[string]func(net.Conn) // fake public hosts, by "ip:port"
	dialer net.Dialer
}

func newDialer(t *testing.T) *recordingDialer {
	return &recordingDialer{t: t, local: map[string]bool{}, piped: map[string]func(net.Conn){}}
}

func (d *recordingDialer) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.asked = append(d.asked, address)
	local, serve := d.local[address], d.piped[address]
	d.mu.Unlock()
	switch {
	case local:
		return d.dialer.DialContext(ctx, network, address)
	case serve != nil:
		client, server := net.Pipe()
		go serve(server)
		return client, nil
	}
	d.t.Errorf("the dialer was asked for %s (%s), which the guard should have refused", address, network)
	return nil, fmt.Errorf("test dialer: %s is not a test server", address)
}

func (d *recordingDialer) addresses() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}

// serve starts a loopback server the dialer may reach, and returns its
// port.
func (d *recordingDialer) serve(t *testing.T, h http.Handler) (*httptest.Server, uint16) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.ParseUint(u.Port(), 10, 16)
	d.mu.Lock()
	d.local[u.Host] = true
	d.mu.Unlock()
	return srv, uint16(port)
}

// pipeText serves one HTTP answer with body over a pipe, as a fake public
// host would.
func pipeText(contentType, body string) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			contentType, len(body), body)
	}
}

// quietLogger drops the allow-list warning.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }
