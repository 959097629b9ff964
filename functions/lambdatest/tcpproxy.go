package lambdatest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// TCPProxy forwards TCP connections to a target address until it is taken
// down, which stands for an outage of the target: Down closes every
// connection and refuses new ones, Up accepts them again.
type TCPProxy struct {
	// Addr is the proxy's address, 127.0.0.1:PORT.
	Addr   string
	target string
	ln     net.Listener
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]struct{}
}

// NewTCPProxy starts a TCPProxy to target, stopped when the test ends.
func NewTCPProxy(t testing.TB, target string) *TCPProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &TCPProxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() {
		_ = ln.Close()
		p.Down()
	})
	go p.serve()
	return p
}

func (p *TCPProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *TCPProxy) forward(c net.Conn) {
	if !p.track(c) {
		_ = c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(up) {
		_ = c.Close()
		return
	}
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// track records a connection to close at Down; false when down.
func (p *TCPProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// Down closes every forwarded connection and refuses new ones.
func (p *TCPProxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Up accepts connections again.
func (p *TCPProxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
