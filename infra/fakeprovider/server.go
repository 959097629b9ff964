package fakeprovider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Server is a running HTTP server on 127.0.0.1 whose Close also ends the
// waits held by its handlers (Sleep, Done). It is safe for concurrent use.
type Server struct {
	ts     *httptest.Server
	done   chan struct{} // closed by Close
	closed sync.Once
}

// Start starts a server answering with h. Close it when done.
func Start(h http.Handler) *Server {
	s := &Server{done: make(chan struct{})}
	s.ts = httptest.NewServer(h)
	return s
}

// URL is the server's base URL, http://127.0.0.1:port.
func (s *Server) URL() string { return s.ts.URL }

// Done is closed when Close begins.
func (s *Server) Done() <-chan struct{} { return s.done }

// Close ends the waits held, then stops the server and waits for its
// handlers to return.
func (s *Server) Close() {
	s.closed.Do(func() { close(s.done) })
	s.ts.Close()
}

// Sleep waits d, or less when ctx ends or the server closes; it reports
// whether it waited it all.
func (s *Server) Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}
