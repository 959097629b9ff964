package httpapi_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/httpapi"
)

func TestNewServerSetsEveryTimeout(t *testing.T) {
	t.Parallel()
	srv := httpapi.NewServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Errorf("read header %v, read %v, idle %v: each must be set", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout)
	}
	if srv.WriteTimeout < 25*time.Second+10*time.Second {
		t.Errorf("write timeout %v leaves no room for a 25 s long poll", srv.WriteTimeout)
	}
	if srv.MaxHeaderBytes <= httpapi.MaxHeaderBytes {
		t.Errorf("MaxHeaderBytes %d must be above the handler's %d, so the handler answers 431 in JSON", srv.MaxHeaderBytes, httpapi.MaxHeaderBytes)
	}
}

// TestSlowBodyIsCutOff trickles a body a byte every 200 ms through a
// NewServer with its read timeout shortened to 1 s: the request ends (408
// or a closed connection) long before the body would be complete.
func TestSlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httpapi.NewServer(b.srv.Config.Handler)
	srv.ReadTimeout = time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const bodyLen = 100 // 20 s at a byte per 200 ms
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/gb/research HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n{", b.alice, bodyLen)
	go func() {
		for i := 1; i < bodyLen; i++ {
			time.Sleep(200 * time.Millisecond)
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	took := time.Since(start)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("got %d, want 408 or a closed connection", resp.StatusCode)
		}
	}
	if took > 5*time.Second {
		t.Fatalf("the slow body was read for %v (answer err %v): the read timeout did not cut it off", took, err)
	}
	t.Logf("cut off after %v (%v)", took.Round(time.Millisecond), err)
}
