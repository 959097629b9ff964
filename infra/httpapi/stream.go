package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs"
)

// Defaults of the event stream (GET /v1/gb/research/{id}/events/stream).
const (
	// DefaultStreamHeartbeat is how long an event stream stays silent
	// before it sends a heartbeat (an SSE comment line), so that proxies
	// and load balancers keep the connection open.
	DefaultStreamHeartbeat = 15 * time.Second
	// DefaultStreamMaxDuration is how long one stream stays open; then it
	// closes without an end event and the client reconnects with
	// Last-Event-ID, losing nothing.
	DefaultStreamMaxDuration = 10 * time.Minute
	// DefaultMaxStreamsPerUser is how many event streams a user may have
	// open at once, over every process that serves the API.
	DefaultMaxStreamsPerUser = 4
)

const (
	// streamPage is the most events read at once.
	streamPage = 500
	// streamRetryMillis is the reconnection delay the stream asks of its
	// client (the SSE retry field).
	streamRetryMillis = 1000
	// streamMargin is how long before its request's deadline (a Lambda
	// invocation's, say) a stream closes, cleanly.
	streamMargin = 3 * time.Second
	// minStreamLease is the shortest life of a stream's row in
	// gb_event_streams between renewals.
	minStreamLease = 30 * time.Second
	// streamSuffix ends the path of the stream route.
	streamSuffix = "/events/stream"
)

// errTooManyStreams refuses a stream to a user who has the most open.
var errTooManyStreams = errors.New("too many event streams open")

// isEventStream says whether r asks for the event stream, whose request
// is not bounded by the API's usual timeout but by the stream's own.
func isEventStream(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, streamSuffix)
}

// eventStream serves the events of the run's tree as Server-Sent Events:
// each event is a message whose id is its tree number (Event.N) and whose
// data is the event's JSON, as GET .../events encodes it. A client that
// reconnects with Last-Event-ID (or ?after=N) gets the events after N,
// none missed and none twice. An idle stream sends a heartbeat comment;
// once every agent of the tree has ended and every event was sent it sends
// an "end" event and closes. Waiting holds no connection: it is the long
// poll's wait (jobs.WaitEvents), a wake-up then a read.
func (a *api) eventStream(w http.ResponseWriter, r *http.Request) {
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	lastN, ok := lastEventID(w, r)
	if !ok {
		return
	}
	if a.NoStream != "" {
		writeError(w, http.StatusNotImplemented, "stream_unavailable", "", a.NoStream)
		return
	}
	ctx := r.Context()
	lease, err := a.openStream(ctx, userID(r), run.RootID)
	if errors.Is(err, errTooManyStreams) {
		w.Header().Set("Retry-After", strconv.Itoa(int(a.streamLease()/time.Second)))
		writeError(w, http.StatusTooManyRequests, "too_many_streams", "", fmt.Sprintf(
			"you already have %d event streams open, the most allowed at once; close one, or follow the events with "+
				"the long poll (GET /v1/gb/research/{id}/events?after=SEQ&wait=25)", a.MaxStreamsPerUser))
		return
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer a.closeStream(ctx, lease)
	after, err := a.seqOfNumber(ctx, run.RootID, lastN)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx and the like: pass each event on at once
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w), window: a.StreamHeartbeat + a.DBTimeout}
	if s.send([]byte("retry: "+strconv.Itoa(streamRetryMillis)+"\n\n")) != nil {
		return
	}
	st := streamState{root: run.RootID, after: after, lastN: lastN, lease: lease, renewed: time.Now()}
	a.pump(ctx, s, &st)
}

// streamState is where a stream is: the seq it has read to, the tree
// number of the last event it sent, and its row in gb_event_streams.
type streamState struct {
	root, after, lastN int64
	lease              string
	renewed            time.Time
}

// pump sends the tree's events as they land until the tree ends, the
// client goes, or the stream's time is up.
func (a *api) pump(ctx context.Context, s *sse, st *streamState) {
	stop := time.Now().Add(a.StreamMaxDuration)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-streamMargin).Before(stop) {
		stop = dl.Add(-streamMargin)
	}
	// A tree that ended before the stream opened gets what it has left and
	// the end at once, not after a wait for events that cannot come (a
	// client that has every event of an ended tree waited a heartbeat).
	if a.endedTree(ctx, s, st) {
		return
	}
	for {
		wait := min(a.StreamHeartbeat, time.Until(stop))
		if wait <= 0 {
			return // the client reconnects with Last-Event-ID
		}
		evs, err := dbCall(ctx, wait+a.DBTimeout, func(ctx context.Context) ([]jobs.Event, error) {
			return jobs.WaitEvents(ctx, a.Service.Pool(), jobs.EventWait{RootID: st.root, After: st.after,
				Limit: streamPage, Wait: wait, Notifier: a.Notifier, Fallback: a.EventFallback})
		})
		if errors.Is(err, jobs.ErrNotFound) {
			a.finish(ctx, s, st, "deleted") // the tree was deleted while the stream waited
			return
		}
		if err != nil {
			a.streamFailed(ctx, s, st, err)
			return
		}
		if s.send(st.frames(evs)) != nil {
			return
		}
		if len(evs) == streamPage {
			continue // a full page: there is more at once
		}
		if a.endedTree(ctx, s, st) {
			return
		}
		if len(evs) == 0 && s.send([]byte(": heartbeat\n\n")) != nil {
			return
		}
		if time.Since(st.renewed) > a.streamLease()/3 {
			if err := a.renewStream(ctx, st.lease); err != nil {
				a.streamFailed(ctx, s, st, err)
				return
			}
			st.renewed = time.Now()
		}
	}
}

// finish sends what is left of an ended tree's events, then the end event.
// Every event that committed with the tree's end or before it is visible
// once the end is.
func (a *api) finish(ctx context.Context, s *sse, st *streamState, status string) {
	for {
		evs, err := dbCall(ctx, a.DBTimeout, func(ctx context.Context) ([]jobs.Event, error) {
			return jobs.Events(ctx, a.Service.Pool(), st.root, st.after, streamPage)
		})
		if err != nil {
			a.streamFailed(ctx, s, st, err)
			return
		}
		if s.send(st.frames(evs)) != nil {
			return
		}
		if len(evs) < streamPage {
			break
		}
	}
	data, _ := json.Marshal(map[string]any{"root_id": st.root, "status": status, "last_id": st.lastN})
	_ = s.send(fmt.Appendf(nil, "event: end\ndata: %s\n\n", data))
}

// frames are the SSE messages of evs that the client does not have yet,
// and moves st past them.
func (st *streamState) frames(evs []jobs.Event) []byte {
	var b bytes.Buffer
	for _, e := range evs {
		st.after = e.Seq
		if e.N <= st.lastN {
			continue
		}
		st.lastN = e.N
		data, err := json.Marshal(e) // one line: JSON escapes every line break of the text
		if err != nil {
			continue // an event's data is JSON read from the database
		}
		fmt.Fprintf(&b, "id: %d\ndata: %s\n\n", e.N, data)
	}
	return b.Bytes()
}

// streamFailed ends a stream that cannot go on with an error event (its
// client reconnects with Last-Event-ID); a client that went is no failure.
func (a *api) streamFailed(ctx context.Context, s *sse, st *streamState, err error) {
	if ctx.Err() != nil {
		return
	}
	code, msg := "internal", "internal error; it has been logged; reconnect with Last-Event-ID"
	if dbUnavailable(err) {
		code, msg = "unavailable", "the database is unavailable; reconnect with Last-Event-ID"
	}
	a.Logger.WarnContext(ctx, "event stream ended by an error", "root_id", st.root, "err", err)
	data, _ := json.Marshal(errorBody{errorDetail{Code: code, Message: msg}})
	_ = s.send(fmt.Appendf(nil, "event: error\ndata: %s\n\n", data))
}

// lastEventID is the tree number of the last event the client has: its
// Last-Event-ID header (set by EventSource when it reconnects), else
// ?after=N, else 0.
func lastEventID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	field, v := "Last-Event-ID", r.Header.Get("Last-Event-ID")
	if v == "" {
		field, v = "after", r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", field,
			field+" must be the id of an event of the stream (an integer ≥ 0)")
		return 0, false
	}
	return n, true
}

// seqOfNumber is the seq of the tree's n-th event: the stream reads on
// after it. When the tree has fewer events, it is the seq of its last, and
// the stream skips the events up to number n as they come.
func (a *api) seqOfNumber(ctx context.Context, root, n int64) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	return dbCall(ctx, a.DBTimeout, func(ctx context.Context) (int64, error) {
		var seq int64
		err := a.Service.Pool().QueryRow(ctx, `SELECT coalesce(
				(SELECT seq FROM gb_agent_research_events WHERE root_id = $1 ORDER BY seq OFFSET $2 LIMIT 1),
				(SELECT max(seq) FROM gb_agent_research_events WHERE root_id = $1), 0)`,
			root, n-1).Scan(&seq)
		if err != nil {
			return 0, fmt.Errorf("error finding event %d of tree %d: %w", n, root, err)
		}
		return seq, nil
	})
}

// endedTree ends the stream when every run of its tree has ended (with
// the last events and the end) or when that cannot be read (with the
// error), and says whether it did.
func (a *api) endedTree(ctx context.Context, s *sse, st *streamState) bool {
	status, ended, err := a.treeEnded(ctx, st.root)
	if err != nil {
		a.streamFailed(ctx, s, st, err)
		return true
	}
	if ended {
		a.finish(ctx, s, st, status)
	}
	return ended
}

// treeEnded says whether every run of the tree has ended, with its root's
// status; a tree deleted meanwhile has ended, with status "deleted".
func (a *api) treeEnded(ctx context.Context, root int64) (string, bool, error) {
	var (
		status string
		ended  bool
	)
	_, err := dbCall(ctx, a.DBTimeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.Service.Pool().QueryRow(ctx, `SELECT r.status, NOT EXISTS (
				SELECT FROM gb_agent_research_runs w WHERE w.root_id = r.id AND NOT w.status = ANY($2))
			FROM gb_agent_research_runs r WHERE r.id = $1`,
			root, []string{jobs.StatusSucceeded, jobs.StatusFailed, jobs.StatusTimedOut}).Scan(&status, &ended)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "deleted", true, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("error reading whether tree %d ended: %w", root, err)
	}
	return status, ended, nil
}

// streamLease is how long a stream's row counts without a renewal.
func (a *api) streamLease() time.Duration { return max(3*a.StreamHeartbeat, minStreamLease) }

// openStream takes one of the user's stream slots: under the user's row
// lock it counts the user's live streams and, below the bound, records
// this one. It returns the row's id.
func (a *api) openStream(ctx context.Context, uid, root int64) (string, error) {
	var id string
	err := pgx.BeginFunc(ctx, a.Service.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT FROM gb_users WHERE id = $1 FOR UPDATE`, uid); err != nil {
			return fmt.Errorf("error locking user %d: %w", uid, err)
		}
		err := tx.QueryRow(ctx, `WITH gone AS (
				DELETE FROM gb_event_streams WHERE user_id = $1 AND open_until <= now())
			INSERT INTO gb_event_streams (user_id, root_id, open_until)
			SELECT $1, $2, now() + $3 * interval '1 microsecond'
			WHERE (SELECT count(*) FROM gb_event_streams WHERE user_id = $1 AND open_until > now()) < $4
			RETURNING id::text`, uid, root, a.streamLease().Microseconds(), a.MaxStreamsPerUser).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return errTooManyStreams
		}
		if err != nil {
			return fmt.Errorf("error opening an event stream: %w", err)
		}
		return nil
	})
	return id, err
}

// renewStream keeps the stream's row counting for another lease.
func (a *api) renewStream(ctx context.Context, id string) error {
	_, err := dbCall(ctx, a.DBTimeout, func(ctx context.Context) (struct{}, error) {
		_, err := a.Service.Pool().Exec(ctx, `UPDATE gb_event_streams SET open_until = now() + $2 * interval '1 microsecond'
			WHERE id = $1`, id, a.streamLease().Microseconds())
		return struct{}{}, err
	})
	if err != nil {
		return fmt.Errorf("error renewing event stream %s: %w", id, err)
	}
	return nil
}

// closeStream gives the user's slot back, whether or not the client is
// still there; a failure leaves the row to lapse at its lease's end.
func (a *api) closeStream(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.DBTimeout)
	defer cancel()
	if _, err := a.Service.Pool().Exec(ctx, `DELETE FROM gb_event_streams WHERE id = $1`, id); err != nil {
		a.Logger.WarnContext(ctx, "could not close an event stream; its row lapses by itself", "id", id, "err", err)
	}
}

// dbCall runs f bounded by d, the API's usual bound on database work,
// inside a stream whose own request may last minutes.
func dbCall[T any](ctx context.Context, d time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return f(ctx)
}

// sse writes a stream's frames, each flushed at once.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	// window is how long a write may take: the server's write deadline is
	// pushed on by it before each.
	window time.Duration
}

// send writes b and flushes it; nothing to write is no write. A writer
// that cannot flush (Lambda's streaming writer, unbuffered) is fine.
func (s *sse) send(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.window))
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("error writing to the event stream: %w", err)
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("error flushing the event stream: %w", err)
	}
	return nil
}
