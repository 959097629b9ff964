package dashboard_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// chromiumPath is Debian's chromium, which the browser tests drive.
const chromiumPath = "/usr/bin/chromium"

// runScript runs the browser test e2e/<script> with node against the
// stack's API and key, with args after them, env added to the environment
// and screenshots going to shots; it logs what the script prints and
// returns it line by line. The test fails unless every check passed.
func runScript(t *testing.T, node string, s *stack, shots, script string, env []string, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"e2e/" + script, s.srv.URL, s.key}, args...)...)
	cmd.Env = append(append(os.Environ(), "SCREENSHOT_DIR="+shots, "CHROMIUM="+chromiumPath), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		t.Log(sc.Text())
		lines = append(lines, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("browser test %s failed: %v (screenshots in %s)", script, err, shots)
	}
	return lines
}

// screenshotDir makes and returns the folder for a browser test's
// screenshots: dir, relative to the top of the repository unless it is
// absolute, or .data/screenshots there when dir is empty.
func screenshotDir(t *testing.T, dir string) string {
	t.Helper()
	shots := filepath.Join(repoRoot(t), ".data", "screenshots")
	switch {
	case filepath.IsAbs(dir):
		shots = dir
	case dir != "":
		shots = filepath.Join(repoRoot(t), dir)
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return shots
}

// browserTools returns node's path once node, Chromium and playwright-core
// are there; it installs playwright-core with npm ci when only that is
// missing. What cannot be had skips the test, or fails it under CI=true.
func browserTools(t *testing.T) string {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s under CI=true (.ci/run installs it)", what)
		}
		t.Skip(what)
	}
	if testing.Short() {
		t.Skip("the browser test is not short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		missing(chromiumPath + " is missing: apt-get install -y chromium")
	}
	if _, err := os.Stat("e2e/node_modules/playwright-core/package.json"); errors.Is(err, os.ErrNotExist) {
		npm, err := exec.LookPath("npm")
		if err != nil {
			missing("playwright-core is not installed and npm is missing: run npm ci in infra/dashboard/e2e")
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = "e2e"
		if b, err := cmd.CombinedOutput(); err != nil {
			missing("npm ci in infra/dashboard/e2e failed: " + err.Error() + "\n" + string(b))
		}
	}
	return node
}

// repoRoot is the folder of go.mod above the test's folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above " + dir)
		}
		dir = parent
	}
}
