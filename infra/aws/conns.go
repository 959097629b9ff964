package aws

import (
	"context"
	"time"
)

// ReleaseConns closes every idle connection of the pool and returns how
// many it closed; the pool opens new ones when next needed. The API calls
// it after each invocation that wrote: River's job insert calls nextval(),
// which pins an RDS Proxy session to its client connection until that
// connection closes, so no connection that may be pinned outlives its
// invocation (see docs/serverless.md). A connection still in use is closed
// when it comes back.
func (r *Runtime) ReleaseConns(ctx context.Context) int {
	if r.Pool == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if r.Pool.Stat().AcquiredConns() > 0 {
		r.Pool.Reset()
	}
	conns := r.Pool.AcquireAllIdle(ctx)
	for _, c := range conns {
		// Close says goodbye to the server now; Release then drops the
		// closed connection from the pool.
		_ = c.Conn().Close(ctx)
		c.Release()
	}
	return len(conns)
}
