package messenger

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// stallProxy forwards TCP connections to Postgres; stall makes the
// connections open so far go silent, both ways, without closing them: what
// a connection cut by a failover or a NAT looks like to the client.
type stallProxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	conns  []*proxied
	closed chan struct{}
}

type proxied struct {
	client, server net.Conn
	stalled        chan struct{}
	once           sync.Once
	closed         <-chan struct{}
}

func newStallProxy(t *testing.T, upstream string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, upstream: upstream, closed: make(chan struct{})}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *stallProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		pc := &proxied{client: c, server: s, stalled: make(chan struct{}), closed: p.closed}
		p.mu.Lock()
		p.conns = append(p.conns, pc)
		p.mu.Unlock()
		go pc.pipe(s, c)
		go pc.pipe(c, s)
	}
}

// pipe copies from src to dst until the connection stalls or fails.
func (pc *proxied) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-pc.stalled:
			<-pc.closed // hold the sockets open, forward nothing
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			return
		}
	}
}

func (p *stallProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.once.Do(func() { close(c.stalled) })
	}
}

func (p *stallProxy) close() {
	close(p.closed)
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.client.Close()
		c.server.Close()
	}
}

// TestListenerReplacesASilentConnection: the listener's connection goes
// silent without an error (no FIN, no RST). Through its keepalive ping the
// listener notices, reconnects and wakes the waiter whose notification went
// into the void; the waiter's fallback and wait outlast the test's guard,
// so nothing else can. While the connection is healthy, the keepalive pings
// keep it.
func TestListenerReplacesASilentConnection(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	cfg := pool.Config()
	proxy := newStallProxy(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	host, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
	cfg.ConnConfig.Host = host
	p16, _ := strconv.Atoi(port)
	cfg.ConnConfig.Port = uint16(p16)
	cfg.MaxConns = 2
	viaProxy, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(viaProxy.Close)

	const keepalive, pingTO = 200 * time.Millisecond, 300 * time.Millisecond
	l := startListener(t, viaProxy, func(l *Listener) {
		l.keepalive, l.pingTO = keepalive, pingTO
		l.backoffMin, l.backoffMax = 50*time.Millisecond, 200*time.Millisecond
	})
	first := l.BackendPID()
	time.Sleep(5 * keepalive)
	if pid := l.BackendPID(); pid != first {
		t.Fatalf("the listener changed connections (%d, then %d) while it was healthy", first, pid)
	}

	p := NewPostgres(pool, l, PostgresConfig{FallbackInterval: longWait})
	blocked := blockedSignal(p)
	mustOpen(t, p, 1)
	res := receiveGuarded(t, p, ctx, 1, longWait)
	awaitBlocked(t, blocked)
	proxy.stall()
	mustSend(t, p, 1, "into the void") // its NOTIFY reaches a silent connection
	requireWoken(t, <-res, "into the void", "replacing the silent connection")
	// The new connection woke the waiters just before its pid was recorded.
	if !eventually(10*time.Second, func() bool { pid := l.BackendPID(); return pid != 0 && pid != first }) {
		t.Fatalf("backend pid %d after the stall (was %d), want a new connection", l.BackendPID(), first)
	}

	// The new connection hears notifications.
	slow := NewPostgres(pool, l, PostgresConfig{FallbackInterval: longWait})
	blocked = blockedSignal(slow)
	res = receiveGuarded(t, slow, ctx, 1, longWait)
	awaitBlocked(t, blocked)
	mustSend(t, slow, 1, "heard")
	requireWoken(t, <-res, "heard", "the send's NOTIFY on the new connection")
}
