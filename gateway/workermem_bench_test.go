package gateway

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/builtin"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/worker"
)

// userIdle is the pause after which BenchmarkPerUserWorkerMemory reads
// the workers' memory again (idle-PSS).
const userIdle = 1500 * time.Millisecond

// BenchmarkPerUserWorkerMemory measures what a user costs on MCP
// 2026-07-28 with the built-in worker as `mcpgate serve` starts it
// (mcpgate-worker built as make build does, on SQLite, with the
// environment the gateway gives it and the pool at its default size):
// 16 and 64 users each make a few calls (status, query, list_tables) with their
// own worker, then 1,000 status calls one at a time, spread over the
// users, whose median is p50-ms and whose workers' CPU time per call
// is worker-cpu-µs/call. PSS-MiB/user is the workers' PSS
// (/proc/<pid>/smaps_rollup) summed and divided by the users right after
// those calls, idle-PSS-MiB/user the same after a pause of userIdle.
// MCPGATE_BENCH_WORKER=path runs another build of the worker instead (to
// compare two in one run); MCPGATE_BENCH_SMAPS=path writes one worker's
// /proc/<pid>/smaps there (after the pause).
func BenchmarkPerUserWorkerMemory(b *testing.B) {
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		b.Skip("no /proc/<pid>/smaps_rollup here")
	}
	exe := filepath.Join(b.TempDir(), "mcpgate-worker")
	build := exec.Command("go", "build", "-o", exe, "github.com/mcpgate/mcpgate/cmd/mcpgate-worker")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build
	out, err := build.CombinedOutput()
	require.NoError(b, err, "%s", out)
	if w := os.Getenv("MCPGATE_BENCH_WORKER"); w != "" {
		exe = w // another build, to compare in one run
	}
	for _, users := range []int{16, 64} {
		b.Run(strconv.Itoa(users)+"users", func(b *testing.B) { perUserWorkerMemory(b, exe, users) })
	}
}

func perUserWorkerMemory(b *testing.B, exe string, users int) {
	const calls = 1000
	for range b.N {
		safe, err := tools.SafeToolNames(nil)
		require.NoError(b, err)
		l, err := worker.NewLauncher([]string{exe}, worker.LauncherOptions{
			Env:      append(dbtest.Config(b, db.SQLite).Environ(), builtin.Environ()...),
			PoolSize: worker.DefaultPoolSize, IdentityOnStdin: true, StopGrace: 2 * time.Second, Logger: testLogger(b),
		})
		require.NoError(b, err)
		g, url := serveBench(b, l, Options{Logger: testLogger(b), SafeTools: safe, MaxSessions: 4096,
			MaxSessionsPerUser: 1024, WorkerStartTimeout: time.Minute})
		l.StartPool()
		require.True(b, l.WaitPool(b.Context(), worker.DefaultPoolSize))
		warm := []struct {
			tool string
			args map[string]any
		}{
			{"status", map[string]any{}},
			{"query", map[string]any{"sql": "SELECT * FROM order_totals ORDER BY order_id"}},
			{"list_tables", map[string]any{}},
			{"status", map[string]any{}},
		}
		var wg sync.WaitGroup
		for u := range users {
			wg.Go(func() {
				for i, c := range warm {
					code, m := modernCall(b, url, "u"+strconv.Itoa(u), false, strconv.Itoa(i+1), c.tool, c.args)
					if code != 200 || m["error"] != nil {
						b.Errorf("%s: %d %v", c.tool, code, m)
					}
				}
			})
		}
		wg.Wait()
		var pids []int
		for _, uw := range g.liveBindings(userGen) {
			pids = append(pids, uw.conn.Pid())
		}
		require.Len(b, pids, users)
		cpu0 := cpuOf(b, pids)
		var lat []time.Duration
		for i := range calls {
			start := time.Now()
			code, _ := modernCall(b, url, "u"+strconv.Itoa(i%users), false, "9", "status", map[string]any{})
			lat = append(lat, time.Since(start))
			require.Equal(b, 200, code)
		}
		cpu := cpuOf(b, pids) - cpu0
		var pss int64
		for _, pid := range pids {
			pss += pssOf(b, pid)
		}
		time.Sleep(userIdle) // a pause between a user's bursts
		var idle int64
		for _, pid := range pids {
			idle += pssOf(b, pid)
		}
		b.ReportMetric(float64(idle)/float64(users)/(1<<20), "idle-PSS-MiB/user")
		if path := os.Getenv("MCPGATE_BENCH_SMAPS"); path != "" {
			smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pids[0]))
			require.NoError(b, err)
			require.NoError(b, os.WriteFile(path, smaps, 0o600))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(pss)/float64(users)/(1<<20), "PSS-MiB/user")
		b.ReportMetric(float64(residentKiB(pids[0]))/1024, "RSS-MiB")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(cpu.Microseconds())/calls, "worker-cpu-µs/call")
	}
}

// cpuOf is the time processes pids have run on a CPU, all their threads
// (/proc/<pid>/task/<tid>/schedstat).
func cpuOf(b *testing.B, pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		require.NoError(b, err)
		for _, t := range tasks {
			data, err := os.ReadFile(t)
			if err != nil {
				continue // a thread that ended
			}
			if f := strings.Fields(string(data)); len(f) > 0 {
				ns, err := strconv.ParseInt(f[0], 10, 64)
				require.NoError(b, err)
				sum += time.Duration(ns)
			}
		}
	}
	return sum
}
