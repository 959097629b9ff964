package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// walkTimeout bounds the whole walk.
const walkTimeout = 8 * time.Minute

// loopbackPort is a loopback address with its port, as the README's blocks
// write them (GB_FETCH_ALLOW's 127.0.0.1/32:9000 included).
var loopbackPort = regexp.MustCompile(`\b(127\.0\.0\.1|localhost)(/32)?:(\d{2,5})\b`)

// walkPorts gives each loopback port the runnable lines name (and 8080,
// the CLI's default) a free port of this machine.
func walkPorts(t *testing.T, blocks []readmeBlock) map[string]string {
	t.Helper()
	ports := map[string]string{"8080": ""}
	for _, b := range blocks {
		for _, l := range b.lines {
			for _, m := range loopbackPort.FindAllStringSubmatch(l.text, -1) {
				ports[m[3]] = ""
			}
		}
	}
	var held []net.Listener
	for p := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ln)
		ports[p] = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range held {
		ln.Close()
	}
	return ports
}

// walkPrelude begins the walk's script: errexit and the rest, curl failing
// on an error status (unless the line asks for --fail itself), a failing
// line's number and each block's progress written to fd 3, and every
// background job stopped at the end.
const walkPrelude = `set -euo pipefail
shopt -s inherit_errexit
curl() {
  local a
  for a; do case $a in --fail|--fail-with-body|-[!-]*f*) command curl -S "$@"; return;; esac; done
  command curl -S --fail-with-body "$@"
}
trap 'echo "fail $LINENO $?" >&3' ERR
trap 'kill $(jobs -p) 2>/dev/null || true; wait || true' EXIT
`

// walkScript is the bash script of the runnable blocks, ports moved, and
// for each of its lines the README line it came from (0 for the walk's
// own lines).
func walkScript(blocks []readmeBlock, ports map[string]string) (string, []int) {
	var b strings.Builder
	var lineOf []int
	add := func(readmeLine int, text string) {
		for i, l := range strings.Split(text, "\n") {
			b.WriteString(l + "\n")
			if readmeLine == 0 {
				lineOf = append(lineOf, 0)
			} else {
				lineOf = append(lineOf, readmeLine+i)
			}
		}
	}
	add(0, strings.TrimSuffix(walkPrelude, "\n"))
	for _, blk := range blocks {
		if blk.needs != "" {
			continue
		}
		add(0, fmt.Sprintf(`echo "start %d $EPOCHREALTIME" >&3`, blk.line))
		var sets []string
		for _, l := range blk.lines {
			if l.skip != "" {
				if check := helpCheck(l); check != "" {
					add(l.line, check)
				}
				continue
			}
			add(0, fmt.Sprintf(`echo "line %d $EPOCHREALTIME" >&3`, l.line))
			add(l.line, loopbackPort.ReplaceAllStringFunc(l.text, func(m string) string {
				sub := loopbackPort.FindStringSubmatch(m)
				return sub[1] + sub[2] + ":" + ports[sub[3]]
			}))
			sets = append(sets, l.sets...)
		}
		for _, v := range sets {
			add(0, fmt.Sprintf(`echo "var %d %s ${%s-}" >&3`, blk.line, v, v))
		}
		add(0, fmt.Sprintf(`echo "end %d $EPOCHREALTIME" >&3`, blk.line))
		add(0, `echo "line 0 $EPOCHREALTIME" >&3`)
	}
	return b.String(), lineOf
}

// helpCheck is what the walk runs for a skipped line that is one gb
// command with no variable in it: the command with --help, which checks
// its subcommand and flags and runs nothing; "" for any other line.
func helpCheck(l readmeLine) string {
	code, _ := splitComment(l.text)
	cmds := shellCommands(code)
	if len(cmds) != 1 || cmds[0].background || strings.Contains(code, "$") || strings.ContainsAny(code, "<>|;&") {
		return ""
	}
	if w := cmds[0].words; len(w) < 2 || w[0] != "bin/gb" {
		return ""
	}
	return strings.TrimRight(code, " \t") + " --help >/dev/null"
}

// walkResult is what the walk's script did: its output, how long each
// block took and the variables it set (by the block's README line), and
// the script line that failed (0: none).
type walkResult struct {
	out      []byte
	err      error
	took     map[int]time.Duration // by block
	lineTook map[int]time.Duration // by line
	vars     map[int]map[string]string
	failLine int
	lastLine int // the README line that ran last
}

// runWalk runs script with bash in dir, env added to this process's
// environment less its model, search, API and database settings, bounded
// by walkTimeout; every process it started is killed when it ends.
func runWalk(t *testing.T, dir, script string, env []string) walkResult {
	t.Helper()
	progress, err := os.Create(filepath.Join(t.TempDir(), "progress"))
	if err != nil {
		t.Fatal(err)
	}
	defer progress.Close()
	ctx, cancel := context.WithTimeout(context.Background(), walkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GB_") && !strings.HasPrefix(name, "OPENAI_") && !strings.HasPrefix(name, "DATABASE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{progress}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	res := walkResult{took: map[int]time.Duration{}, lineTook: map[int]time.Duration{}, vars: map[int]map[string]string{}}
	res.err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if ctx.Err() != nil {
		res.err = fmt.Errorf("%w: not done after %s", res.err, walkTimeout)
	}
	res.out = out.Bytes()
	if _, err := progress.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	started := map[int]float64{}
	line, lineStart := 0, 0.0
	sc := bufio.NewScanner(progress)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) < 3 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "line":
			at, _ := strconv.ParseFloat(f[2], 64)
			if line > 0 {
				res.lineTook[line] = time.Duration((at - lineStart) * float64(time.Second))
			}
			line, lineStart = n, at
			if n > 0 {
				res.lastLine = n
			}
		case "start":
			started[n], _ = strconv.ParseFloat(f[2], 64)
		case "end":
			end, _ := strconv.ParseFloat(f[2], 64)
			res.took[n] = time.Duration((end - started[n]) * float64(time.Second))
		case "var":
			if res.vars[n] == nil {
				res.vars[n] = map[string]string{}
			}
			if len(f) == 4 {
				res.vars[n][f[2]] = f[3]
			} else {
				res.vars[n][f[2]] = ""
			}
		case "fail":
			if res.failLine == 0 {
				res.failLine = n
			}
		}
	}
	return res
}

// readmeLineText is the command line of blocks that begins at README line n.
func readmeLineText(blocks []readmeBlock, n int) string {
	for _, b := range blocks {
		for _, l := range b.lines {
			if n >= l.line && n < l.line+l.n {
				return l.text
			}
		}
	}
	return "?"
}

// lastLines is the last n lines of out.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
