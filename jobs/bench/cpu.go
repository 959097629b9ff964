package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// clockTick is the unit of the CPU times of /proc/PID/stat (USER_HZ, which
// is 100 on Linux).
const clockTick = 10 * time.Millisecond

// procStat is what the bench reads of /proc/PID/stat.
type procStat struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime int64 // clock ticks
	start                        int64 // clock ticks after boot
}

// readStat reads /proc/PID/stat.
func readStat(pid string) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 > len(s) {
		return procStat{}, false
	}
	f := strings.Fields(s[end+2:]) // f[0] is field 3 of proc(5)
	if len(f) < 20 {
		return procStat{}, false
	}
	num := func(field int) int64 {
		v, _ := strconv.ParseInt(f[field-3], 10, 64)
		return v
	}
	return procStat{comm: s[open+1 : end], ppid: int(num(4)), utime: num(14), stime: num(15),
		cutime: num(16), cstime: num(17), start: num(22)}, true
}

// runTime is the CPU time of a live process: from /proc/PID/schedstat in
// nanoseconds when the kernel keeps it, else from its stat in clock ticks.
func runTime(pid string, st procStat) time.Duration {
	if b, err := os.ReadFile("/proc/" + pid + "/schedstat"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				return time.Duration(ns)
			}
		}
	}
	return time.Duration(st.utime+st.stime) * clockTick
}

// Cluster is a Postgres cluster on this machine, known by its postmaster.
type Cluster struct {
	// PID is the postmaster's process id.
	PID int
}

// CPU is the CPU time the cluster has used: its postmaster's, with its
// children that ended, and that of its live children (backends and
// background processes).
func (c *Cluster) CPU() time.Duration {
	pid := strconv.Itoa(c.PID)
	post, ok := readStat(pid)
	if !ok {
		return 0
	}
	total := runTime(pid, post) + time.Duration(post.cutime+post.cstime)*clockTick
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		if st, ok := readStat(name); ok && st.ppid == c.PID {
			total += runTime(name, st)
		}
	}
	return total
}

// FindCluster finds the postmaster of the database pool talks to when it
// runs on this machine: the parent of a backend of pool, whose start time
// must be Postgres's own. pid, when not 0, names the postmaster instead.
// It returns nil and why when the cluster is not here.
func FindCluster(ctx context.Context, pool *pgxpool.Pool, pid int) (*Cluster, string) {
	if pid != 0 {
		if _, ok := readStat(strconv.Itoa(pid)); !ok {
			return nil, fmt.Sprintf("no process %d on this machine", pid)
		}
		return &Cluster{PID: pid}, ""
	}
	var backend int
	var started float64
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid(), extract(epoch FROM pg_postmaster_start_time())::float8").
		Scan(&backend, &started); err != nil {
		return nil, "cannot ask the database: " + err.Error()
	}
	st, ok := readStat(strconv.Itoa(backend))
	if !ok {
		return nil, "remote"
	}
	post, ok := readStat(strconv.Itoa(st.ppid))
	boot, err := bootTime()
	if !ok || err != nil || !strings.HasPrefix(post.comm, "postgres") && !strings.HasPrefix(post.comm, "postmaster") {
		return nil, "remote"
	}
	// The local process of that pid must be the server's: its parent
	// started when the server says its postmaster did.
	at := float64(boot) + float64(post.start)*clockTick.Seconds()
	if math.Abs(at-started) > 5 {
		return nil, "remote"
	}
	return &Cluster{PID: st.ppid}, ""
}

// bootTime is when the machine booted, in Unix seconds.
func bootTime() (int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("reading /proc/stat: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no btime in /proc/stat")
}

// memoryKB reads a field of /proc/self/status in kB (VmRSS, VmHWM); 0
// when it cannot.
func memoryKB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// resetPeakRSS starts VmHWM again from the current RSS (Linux's clear_refs
// 5); where it cannot, VmHWM stays the peak since the process started.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}
