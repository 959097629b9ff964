package httpapi

import (
	"net/http"
	"time"
)

// Timeouts of the http.Server NewServer makes.
const (
	// ServerReadHeaderTimeout bounds reading a request's header.
	ServerReadHeaderTimeout = 10 * time.Second
	// ServerReadTimeout bounds reading a whole request, body included, so
	// that a body trickled a byte at a time is cut off.
	ServerReadTimeout = 30 * time.Second
	// ServerWriteTimeout bounds a request from the end of its header to the
	// end of its answer; it leaves room for a 25 s long poll.
	ServerWriteTimeout = 60 * time.Second
	// ServerIdleTimeout bounds how long a kept-alive connection waits for
	// its next request.
	ServerIdleTimeout = 120 * time.Second
	// ServerMaxHeaderBytes is above MaxHeaderBytes, so that the handler, not
	// the server, answers headers that are too large, with a JSON body.
	ServerMaxHeaderBytes = 4 * MaxHeaderBytes
)

// NewServer returns an http.Server for h with every timeout set, for
// serving the API directly (gb dev) rather than behind API Gateway.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ServerReadHeaderTimeout,
		ReadTimeout:       ServerReadTimeout,
		WriteTimeout:      ServerWriteTimeout,
		IdleTimeout:       ServerIdleTimeout,
		MaxHeaderBytes:    ServerMaxHeaderBytes,
	}
}
