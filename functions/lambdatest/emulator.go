package lambdatest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// emulator is one aws-lambda-rie process: the invoke address it serves and
// how it ended.
type emulator struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process ended
	how    string        // how it ended ("signal: killed"); set before exited is closed
}

// bindAttempts is how many times startEmulator picks new ports when
// another process took the chosen ones before the emulator bound them.
const bindAttempts = 3

// startEmulator runs bootstrap under f's emulator on free ports, with
// only env (plus PATH and HOME), its output going to f's logs. It returns
// once the emulator itself listens on its invoke port.
func startEmulator(f *Function, bootstrap string, env map[string]string) (*emulator, error) {
	for attempt := 1; ; attempt++ {
		mark := len(f.Logs())
		e, err := tryEmulator(f.rie, bootstrap, env, f.logs)
		if err == nil {
			return e, nil
		}
		// A port is free when chosen and bound by the emulator a moment
		// later; in between, any process on the machine may take it.
		if attempt < bindAttempts && strings.Contains(f.Logs()[mark:], "address already in use") {
			continue
		}
		return nil, err
	}
}

func tryEmulator(rie, bootstrap string, env map[string]string, logs *os.File) (*emulator, error) {
	apiPort, err := freePort()
	if err != nil {
		return nil, err
	}
	runtimePort, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address", "127.0.0.1:"+strconv.Itoa(apiPort),
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(runtimePort),
		bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LOG_LEVEL=warn"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	// A process group of its own, so that stopping it stops whatever it
	// runs in its group. The emulator starts the bootstrap in a group of
	// the bootstrap's own; the bootstrap exits when its runtime API goes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", rie, err)
	}
	e := &emulator{url: "http://127.0.0.1:" + strconv.Itoa(apiPort), cmd: cmd, exited: make(chan struct{})}
	go func() {
		if err := cmd.Wait(); err != nil && cmd.ProcessState == nil {
			e.how = err.Error()
		} else {
			e.how = cmd.ProcessState.String()
		}
		close(e.exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-e.exited:
			return nil, fmt.Errorf("the emulator ended before it listened (%s)", e.how)
		default:
		}
		owned, err := listensOn(cmd.Process.Pid, apiPort)
		if err != nil {
			e.stop()
			return nil, err
		}
		if owned {
			return e, nil
		}
		if time.Now().After(deadline) {
			e.stop()
			return nil, fmt.Errorf("the emulator did not listen on port %d within 10s", apiPort)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the emulator's process group and waits until it ended.
func (e *emulator) stop() {
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.exited
}

// ended reports how the emulator ended, waiting up to wait for it: after
// a broken connection, its end may be seen a moment later.
func (e *emulator) ended(wait time.Duration) (done bool, how string) {
	select {
	case <-e.exited:
		return true, e.how
	case <-time.After(wait):
		return false, ""
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("choosing a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// listensOn reports whether process pid holds the socket listening on
// 127.0.0.1:port, so that a connection to the port reaches that process
// and not another that took the port first. It reads /proc/net/tcp for
// the listening socket's inode and the process's descriptors for it.
func listensOn(pid, port int) (bool, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return false, fmt.Errorf("reading the listening sockets: %w", err)
	}
	defer f.Close()
	inode, err := listeningInode(f, fmt.Sprintf("0100007F:%04X", port))
	if err != nil || inode == "" {
		return false, err
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil // ended; the caller sees it
		}
		return false, fmt.Errorf("reading the emulator's descriptors: %w", err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && link == "socket:["+inode+"]" {
			return true, nil
		}
	}
	return false, nil
}

// listeningInode returns the inode of the socket in state LISTEN (0A) at
// local address addr in a /proc/net/tcp table, or "" when there is none.
func listeningInode(r io.Reader, addr string) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(sc.Text())
		if len(f) >= 10 && f[1] == addr && f[3] == "0A" {
			return f[9], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading the listening sockets: %w", err)
	}
	return "", nil
}
