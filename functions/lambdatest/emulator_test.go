package lambdatest

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startEcho runs the echo function of testdata under the emulator.
func startEcho(t *testing.T) *Function {
	t.Helper()
	return Start(t, Build(t, "functions/lambdatest/testdata/echo"), map[string]string{"AWS_LAMBDA_FUNCTION_TIMEOUT": "30"})
}

// TestInvokeStartsAnEmulatorKilledBeforeTheInvocationAgain kills the
// emulator from outside, as a stray signal would, between two invokes:
// the next invoke finds it gone before its invocation began, starts it
// again on new ports and gets its answer.
func TestInvokeStartsAnEmulatorKilledBeforeTheInvocationAgain(t *testing.T) {
	t.Parallel()
	fn := startEcho(t)
	if inv := fn.Invoke(t, []byte(`{"n":1}`)); string(inv.Body) != `{"n":1}` {
		t.Fatalf("first invoke: %d %s", inv.Status, inv.Body)
	}
	first := fn.URL
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		fn.mu.Lock()
		e := fn.emu
		fn.mu.Unlock()
		if err := syscall.Kill(e.cmd.Process.Pid, sig); err != nil {
			t.Fatal(err)
		}
		if ended, _ := e.ended(10 * time.Second); !ended {
			t.Fatalf("the emulator outlived %v", sig)
		}
		inv := fn.Invoke(t, []byte(`{"after":"`+sig.String()+`"}`))
		if string(inv.Body) != `{"after":"`+sig.String()+`"}` || inv.FunctionError != "" {
			t.Fatalf("invoke after %v: %d %q %s", sig, inv.Status, inv.FunctionError, inv.Body)
		}
	}
	if fn.URL == first {
		t.Fatalf("the emulator kept its address %s after being started again", first)
	}
}

// fatalTB records a test's fatal message and ends its goroutine as
// testing.T does, so that a test can see another helper fail.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

func (f *fatalTB) message() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msg
}

// TestInvokeFailsWhenTheEmulatorEndsDuringTheInvocation: once the
// invocation began, the function may have acted on the event, so an
// emulator that ends under it fails the test instead of sending the
// event again.
func TestInvokeFailsWhenTheEmulatorEndsDuringTheInvocation(t *testing.T) {
	t.Parallel()
	fn := startEcho(t)
	ft := &fatalTB{TB: t}
	done := make(chan Invocation, 1)
	go func() {
		defer close(done)
		done <- fn.Invoke(ft, []byte(`{"sleep":"20s"}`))
	}()
	for !strings.Contains(fn.Logs(), "START RequestId: ") {
		select {
		case inv, ok := <-done:
			t.Fatalf("the invoke ended before it began: %v %s %q", ok, inv.Body, ft.message())
		case <-time.After(10 * time.Millisecond):
		}
	}
	fn.mu.Lock()
	e := fn.emu
	fn.mu.Unlock()
	if err := syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if inv, ok := <-done; ok {
		t.Fatalf("the invoke answered %d %s after its emulator was killed", inv.Status, inv.Body)
	}
	if msg := ft.message(); !strings.Contains(msg, "the emulator ended during the invocation") {
		t.Fatalf("the invoke failed with %q; want it to say the emulator ended during the invocation", msg)
	}
}

// TestListensOnTellsTheListenersProcess: a port's listener is found in
// the process that holds it and in no other.
func TestListensOnTellsTheListenersProcess(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if ok, err := listensOn(os.Getpid(), port); err != nil || !ok {
		t.Fatalf("listensOn(this process, %d) = %v, %v; want true", port, ok, err)
	}
	if ok, err := listensOn(os.Getppid(), port); err != nil || ok {
		t.Fatalf("listensOn(the parent, %d) = %v, %v; want false", port, ok, err)
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The connected socket's own port is no listener.
	if ok, err := listensOn(os.Getpid(), c.LocalAddr().(*net.TCPAddr).Port); err != nil || ok {
		t.Fatalf("listensOn(a connection's port) = %v, %v; want false", ok, err)
	}
}

// TestListeningInodeReadsTheTable reads a /proc/net/tcp table with a
// listener, a connection on the same port and another address.
func TestListeningInodeReadsTheTable(t *testing.T) {
	t.Parallel()
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9DF5 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9DF5 0100007F:CCBC 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1
   2: 00000000:9DF6 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 100 0 0 10 0
`
	for addr, want := range map[string]string{"0100007F:9DF5": "4242", "0100007F:9DF6": "", "0100007F:0050": ""} {
		if got, err := listeningInode(strings.NewReader(table), addr); err != nil || got != want {
			t.Errorf("listeningInode(%s) = %q, %v; want %q", addr, got, err, want)
		}
	}
}
