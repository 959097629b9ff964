package providerbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gbresearch/gb/infra/openai/openaifake"
)

// The worker processes of the crash storm: `gb worker`, started, SIGKILLed
// and started again.

// stormWorkerEnv is the environment of a worker calling the fake provider:
// this process's, without its database, provider and gb settings.
func stormWorkerEnv(dbURL, providerURL string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "DATABASE_URL" || name == "DATABASE_SECRET_ARN" || strings.HasPrefix(name, "OPENAI_") ||
			strings.HasPrefix(name, "GB_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "DATABASE_URL="+dbURL, "OPENAI_API_KEY="+openaifake.DefaultAPIKey,
		"OPENAI_BASE_URL="+providerURL, "GB_MODEL="+ModelDefault, "GB_LOG_LEVEL=warn")
}

// workerProc is one `gb worker` process.
type workerProc struct {
	cmd    *exec.Cmd
	out    *tail
	done   chan struct{} // closed when it has exited
	killed bool          // by the storm or by stop
}

// workers keeps one process running in each slot.
type workers struct {
	bin   string
	env   []string
	mu    sync.Mutex
	slots []*workerProc
	// gone are the processes that exited by themselves, each with its
	// last lines.
	gone []string
}

// startWorkers starts n workers.
func startWorkers(bin string, env []string, n int) (*workers, error) {
	w := &workers{bin: bin, env: env, slots: make([]*workerProc, n)}
	for i := range n {
		if err := w.start(i); err != nil {
			w.stop()
			return nil, err
		}
	}
	return w, nil
}

// start starts the worker of slot i.
func (w *workers) start(i int) error {
	p := &workerProc{cmd: exec.Command(w.bin, "worker"), out: &tail{}, done: make(chan struct{})}
	p.cmd.Env = w.env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("error starting a worker: %w", err)
	}
	go func() {
		err := p.cmd.Wait()
		w.mu.Lock()
		if !p.killed {
			w.gone = append(w.gone, fmt.Sprintf("pid %d exited by itself (%v); its last lines:\n%s",
				p.cmd.Process.Pid, err, p.out.String()))
		}
		w.mu.Unlock()
		close(p.done)
	}()
	w.mu.Lock()
	w.slots[i] = p
	w.mu.Unlock()
	return nil
}

// kill SIGKILLs the worker of slot i and waits for its end.
func (w *workers) kill(i int) {
	w.mu.Lock()
	p := w.slots[i]
	p.killed = true
	w.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// storm lands o.Kills SIGKILLs, spread evenly over o.Over from begin with
// a jitter of a quarter of their spacing either way, each on a worker
// taken at random, started again after o.Pause; it stops early when ctx
// ends, and returns the kills that landed.
func (w *workers) storm(ctx context.Context, begin time.Time, o StormOptions) int {
	spacing := o.Over / time.Duration(o.Kills)
	for k := range o.Kills {
		at := begin.Add(spacing*time.Duration(k) + spacing/4 + rand.N(spacing/2+1))
		if !sleepUntil(ctx, at) {
			return k
		}
		i := rand.IntN(len(w.slots))
		w.kill(i)
		sleepUntil(ctx, time.Now().Add(o.Pause))
		if err := w.start(i); err != nil {
			w.mu.Lock()
			w.gone = append(w.gone, err.Error())
			w.mu.Unlock()
			return k + 1
		}
	}
	return o.Kills
}

// sleepUntil waits until at, and reports false if ctx ended first.
func sleepUntil(ctx context.Context, at time.Time) bool {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// unexpected lists the workers that exited by themselves.
func (w *workers) unexpected() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.gone...)
}

// stop stops every worker: SIGTERM, and SIGKILL after 15 s.
func (w *workers) stop() {
	w.mu.Lock()
	procs := append([]*workerProc(nil), w.slots...)
	for _, p := range procs {
		if p != nil {
			p.killed = true
		}
	}
	w.mu.Unlock()
	for _, p := range procs {
		if p == nil {
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// tail keeps the last tailSize bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 8 << 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - tailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
