package httpapi_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
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

// TestSlowBodyIsCutOff trickles a valid create request a byte every 200 ms
// through a NewServer with its read timeout shortened to 1 s: the server
// answers 408 in JSON or closes the connection while the body is still
// coming, and no research is started from it.
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
	// JSON allows the padding: read in full, this body starts a research.
	const bodyLen = 100 // 20 s at a byte per 200 ms
	body := `{` + strings.Repeat(" ", bodyLen-len(`{"topic":"slow body"}`)) + `"topic":"slow body"}`
	fmt.Fprintf(conn, "POST /v1/gb/research HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
		b.alice, bodyLen, body[:1])
	var sent atomic.Int64
	sent.Store(1)
	go func() {
		for i := 1; i < bodyLen; i++ {
			time.Sleep(200 * time.Millisecond)
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	// Only a guard against a server that never answers: the whole body
	// takes 20 s to send.
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	sentWhenAnswered := sent.Load()
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		t.Fatalf("the server never answered the slow body nor closed the connection: %v", err)
	case err != nil:
		// A closed connection is a cut-off too.
		t.Logf("connection closed: %v", err)
	default:
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Error struct{ Code string } }
		if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(data, &e) != nil || e.Error.Code != "request_timeout" {
			t.Errorf("got %d %s, want a 408 request_timeout error or a closed connection", resp.StatusCode, data)
		}
	}
	if sentWhenAnswered >= bodyLen {
		t.Errorf("answered after the whole body of %d bytes was sent: the read timeout did not cut it off", bodyLen)
	}
	if _, list := b.call(t, b.alice, "GET", "/v1/gb/research", ""); len(list["runs"].([]any)) != 0 {
		t.Errorf("the cut-off body started a research: %v", list)
	}
}
