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

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
)

// TestREADMEWalk runs every fenced shell block of README.md (```sh, ```bash,
// ```shell, ```console) as written, in README order, in one bash process
// at the checkout's top (where go build -o bin/gb leaves bin/gb, as it does
// for a reader) with errexit, nounset and pipefail, curl failing on an
// error status: a variable an earlier block set is there for the later
// ones, and a server an earlier block started with & serves them. The
// machine is a fresh one with the offline model: no model key, no search
// provider, DATABASE_URL a new database of this test (infra/pg.sh start
// prints it, as it does whenever DATABASE_URL is set), and each loopback
// port the blocks name (127.0.0.1:8080, :9000) moved to a free one, with
// GB_API_URL where 8080 went (the CLI's default address).
//
// What the walk does not run says so in the README, plainly:
//   - a block whose paragraph right before it has a sentence beginning
//     "Needs" (Needs root and the network: …) is skipped whole;
//   - a line whose trailing comment begins "needs" (# needs a public
//     https URL of yours) is skipped;
//   - a line running the test suite (infra/test.sh, go test) is not run:
//     this walk is one of its tests.
//
// A skipped line that is one bin/gb command with no variable still runs
// with --help added: its subcommand and flags must exist.
//
// Every other line must be runnable offline: bin/gb (or go run ./cmd/gb),
// go build/env, curl, jq, infra/pg.sh and a few shell tools; the test fails
// on a line that runs anything else (sam, aws, apt-get…) or a bare gb
// (not on PATH after the README builds bin/gb), unless it is marked. A
// server (gb dev, gb worker, gb webhooks listen without --count) must be
// started with &: it serves the rest of the walk and is stopped when it
// ends. A --follow ends with its research, so it runs in the foreground.
// The walk is bounded as a whole (walkTimeout).
//
// Then the researches of the owner walkthroughs end as the README says: the
// interactive ones answered, the plans approved and run (only the
// sub-agent named in the REST API's edited plan), the one left waiting
// cancelled; and gb webhooks listen printed a verified event.
func TestREADMEWalk(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's commands need %s: %v", tool, err)
		}
	}
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(top, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseREADME(string(readme))
	var problems []string
	for _, b := range blocks {
		for _, l := range b.lines {
			if b.needs == "" && l.problem != "" {
				problems = append(problems, fmt.Sprintf("README.md:%d: %s, and neither it (# needs …) nor the text before its block (Needs …) says what it needs:\n\t%s", l.line, l.problem, l.text))
			}
		}
	}
	if len(problems) > 0 {
		t.Fatalf("lines the walk cannot run:\n%s", strings.Join(problems, "\n"))
	}

	url := dbtest.NewURL(t)
	pool, err := db.Open(context.Background(), db.PoolConfig{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ports := walkPorts(t, blocks)
	script, lineOf := walkScript(blocks, ports)
	res := runWalk(t, top, script, []string{"DATABASE_URL=" + url, "GB_API_URL=http://127.0.0.1:" + ports["8080"], "NO_COLOR=1"})
	for _, b := range blocks {
		switch {
		case b.needs != "":
			t.Logf("README.md:%d: block skipped: %s", b.line, b.needs)
		default:
			t.Logf("README.md:%d: block ran in %s", b.line, res.took[b.line].Round(100*time.Millisecond))
		}
		for _, l := range b.lines {
			switch {
			case l.skip != "" && b.needs == "" && helpCheck(l) != "":
				t.Logf("README.md:%d: line skipped (%s), its command and flags checked with --help", l.line, l.skip)
			case l.skip != "" && b.needs == "":
				t.Logf("README.md:%d: line skipped (%s)", l.line, l.skip)
			case res.lineTook[l.line] > 5*time.Second:
				t.Logf("README.md:%d: line ran in %s", l.line, res.lineTook[l.line].Round(100*time.Millisecond))
			}
		}
	}
	if res.err != nil {
		at := "before its first block"
		switch {
		case res.failLine > 0 && res.failLine <= len(lineOf) && lineOf[res.failLine-1] > 0:
			at = fmt.Sprintf("at README.md:%d:\n\t%s", lineOf[res.failLine-1], readmeLineText(blocks, lineOf[res.failLine-1]))
		case res.lastLine > 0:
			at = fmt.Sprintf("while README.md:%d ran:\n\t%s", res.lastLine, readmeLineText(blocks, res.lastLine))
		}
		t.Fatalf("the README's blocks failed (%v) %s\n--- the last of their output:\n%s", res.err, at, lastLines(res.out, 150))
	}

	s := &cliStack{pool: pool}
	walkthroughs := 0
	for _, b := range blocks {
		vars := res.vars[b.line]
		switch {
		case strings.Contains(b.text, "bin/gb research answer $ask"):
			checkAnswered(t, s, walkID(t, vars, "ask"), "the standard library only")
			checkPlanRan(t, s, walkID(t, vars, "plan"), "")
			checkCancelled(t, s, walkID(t, vars, "later"))
			walkthroughs++
		case strings.Contains(b.text, "$API/v1/gb/research/$ask/answer"):
			checkAnswered(t, s, walkID(t, vars, "ask"), "the standard library only")
			checkPlanRan(t, s, walkID(t, vars, "plan"), "routers")
			walkthroughs++
		}
	}
	if walkthroughs != 2 {
		t.Errorf("found %d of the owner walkthroughs (the CLI's and the REST API's), want 2", walkthroughs)
	}
	if !listenedLine.Match(res.out) {
		t.Errorf("gb webhooks listen printed no line like the README's:\n%s", lastLines(res.out, 150))
	}
}

// listenedLine is the line gb webhooks listen prints for a verified event,
// as the Webhooks block shows it.
var listenedLine = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d research\.succeeded research \d+ succeeded · msg_\w+ · \d+ agents?, \d+ steps, \d+ tokens · \$\d+\.\d+ · /v1/gb/research/\d+$`)

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

// walkID is the run id the walk left in variable name of a block.
func walkID(t *testing.T, vars map[string]string, name string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(vars[name], 10, 64)
	if err != nil {
		t.Fatalf("the block set no run id in $%s (%q): %v", name, vars[name], err)
	}
	return id
}

// waitCLIEnded waits up to a minute for run id to end.
func waitCLIEnded(t *testing.T, s *cliStack, id int64) *jobs.Run {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		run, err := jobs.GetRun(context.Background(), s.pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Ended() {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d did not end: %s %s", id, run.Status, run.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkAnswered checks that research id succeeded with its owner's answer.
func checkAnswered(t *testing.T, s *cliStack, id int64, answer string) {
	t.Helper()
	run := waitCLIEnded(t, s, id)
	if run.Status != jobs.StatusSucceeded || !strings.Contains(run.Report, "answered: "+answer) {
		t.Errorf("interactive run %d: %s (%s), report:\n%s", id, run.Status, run.Error, run.Report)
	}
}

// checkCancelled checks that research id ended cancelled by its owner.
func checkCancelled(t *testing.T, s *cliStack, id int64) {
	t.Helper()
	if run := waitCLIEnded(t, s, id); run.Status != jobs.StatusFailed || !strings.Contains(run.Error, "cancel") {
		t.Errorf("run %d cancelled by the README: %s (%s)", id, run.Status, run.Error)
	}
}

// checkPlanRan checks that research id succeeded with the sub-agents of
// its approved plan (only the one named only, when not "").
func checkPlanRan(t *testing.T, s *cliStack, id int64, only string) {
	t.Helper()
	run := waitCLIEnded(t, s, id)
	if run.Status != jobs.StatusSucceeded || run.Plan == nil || run.Plan.State != jobs.PlanApproved {
		t.Fatalf("run %d with a plan: %s (%s), plan %+v", id, run.Status, run.Error, run.Plan)
	}
	tree, err := jobs.Tree(context.Background(), s.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != len(run.Plan.Subagents)+1 || len(tree) < 2 || only != "" && (len(tree) != 2 || tree[1].Name != only) {
		t.Fatalf("run %d ran %d runs for its plan of %d (%s)", id, len(tree), len(run.Plan.Subagents), only)
	}
	for _, kid := range tree[1:] {
		if kid.Status != jobs.StatusSucceeded || !strings.Contains(run.Report, "### "+kid.Name) {
			t.Errorf("sub-agent %s: %s; merged in the report: %t", kid.Name, kid.Status, strings.Contains(run.Report, "### "+kid.Name))
		}
	}
}
