package main

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"strings"
	"testing"
	"time"
)

func TestFormatting(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"thousands small", thousands(999), "999"},
		{"thousands", thousands(1234567), "1,234,567"},
		{"thousands negative", thousands(-1234), "-1,234"},
		{"micros below 10 keeps a decimal", fmtMicros(4500 * time.Nanosecond), "4.5"},
		{"micros rounds", fmtMicros(1234567 * time.Nanosecond), "1,235"},
		{"dur nothing", fmtDur(0), "—"},
		{"dur µs", fmtDur(250 * time.Microsecond), "250 µs"},
		{"dur ms", fmtDur(12340 * time.Microsecond), "12.3 ms"},
		{"ratio", ratio(3, 2), "1.50×"},
		{"ratio ten", ratio(25, 2), "12.5×"},
		{"ratio hundred", ratio(1000, 3), "333×"},
		{"ratio missing", ratio(0, 2), "—"},
		{"base column has no ratio", withRatio("5", 5, 5, true), "5"},
		{"other column has one", withRatio("10", 10, 5, false), "10 (2.00×)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func load(tool string, n int, p50, p99 time.Duration, cps float64) LoadResult {
	return LoadResult{Tool: tool, Sessions: n, Calls: 100, CallsPerSec: cps,
		Latency: Summary{Count: 100, P50: p50, P99: p99}, ServerCPU: p50 / 4}
}

func testRun() *Run {
	us := time.Microsecond
	return &Run{
		Config: Config{
			Concurrency: []int{1, 64},
			Trivial:     Tool{Label: "trivial", Name: "echo"},
			Idle:        10,
			Hold:        1000,
			Notes:       []string{"a note"},
		},
		Systems: []SystemResult{
			{Name: sysFloor,
				Load:  []LoadResult{load("trivial", 1, 100*us, 200*us, 8000), load("trivial", 64, 5000*us, 9000*us, 10000)},
				Start: &StartResult{Count: 5, Latency: Summary{Count: 5, P50: 4 * time.Millisecond, P99: 6 * time.Millisecond}},
				Idle:  &IdleResult{Sessions: 10, Opened: 10, PerSessionRSS: 8 << 20, PerSessionPSS: 2 << 20, After: Memory{PSS: 1, Procs: 10}}},
			{Name: sysSDK,
				Load: []LoadResult{load("trivial", 1, 150*us, 400*us, 5000), load("trivial", 64, 8000*us, 20000*us, 5000)},
				Hold: &HoldResult{Sessions: 1000, Opened: 1000, Answered: 1000, Memory: Memory{RSS: 100 << 20, PSS: 90 << 20}, Call: Summary{Count: 9, P50: 300 * us}}},
			{Name: sysMCPGate, SessionUsers: 16,
				WarmStart: &StartResult{Count: 5, Latency: Summary{Count: 5, P50: 2 * time.Millisecond}},
				Hold:      &HoldResult{Sessions: 1000, Users: 16, Answered: 1000, Memory: Memory{PSS: 180 << 20, Procs: 1005}, Call: Summary{Count: 9, P50: 390 * us}},
				Load: []LoadResult{load("trivial", 1, 220*us, 500*us, 4000), load("trivial", 64, 9000*us, 30000*us, 7500),
					{Tool: "trivial", Sessions: 64, Errors: 3, FirstError: "boom"}}},
			{Name: sysSupergateway, Skipped: "npm not found"},
		},
	}
}

func TestTable(t *testing.T) {
	out := Table(testRun())
	lines := strings.Split(out, "\n")
	t.Run("header names systems that ran, not skipped ones", func(t *testing.T) {
		if !strings.Contains(lines[0], "floor") || !strings.Contains(lines[0], "mcpgate") || strings.Contains(lines[0], "supergateway") {
			t.Errorf("got header %q", lines[0])
		}
	})
	t.Run("columns line up", func(t *testing.T) {
		w := len([]rune(lines[0]))
		for _, l := range lines {
			if !strings.HasPrefix(l, "|") {
				break
			}
			if got := len([]rune(l)); got != w {
				t.Errorf("line %q is %d runes wide, want %d", l, got, w)
			}
		}
	})
	cells := map[string][]string{}
	for _, l := range lines {
		if !strings.HasPrefix(l, "| ") {
			continue
		}
		var row []string
		for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
			row = append(row, strings.TrimSpace(c))
		}
		cells[row[0]] = row[1:]
	}
	tests := []struct {
		row  string
		col  int // 0 floor, 1 sdk, 2 mcpgate
		want string
	}{
		{"echo p50 @1 (µs)", 0, "100"},
		{"echo p50 @1 (µs)", 2, "220 (2.20×)"},
		{"echo added p50 @1 over floor (µs)", 0, "—"},
		{"echo added p50 @1 over floor (µs)", 2, "+120"},
		{"echo added p50 @1 over floor (µs)", 1, "+50"},
		{"echo p99 @64 (µs)", 1, "20,000 (2.22×)"},
		{"echo calls/s @64", 2, "7,500 (0.75×)"},
		{"echo server CPU per call @1 (µs)", 0, "25"},
		{"echo server CPU per call @1 (µs)", 2, "55 (2.20×)"},
		{"echo server CPU per call @64 (µs)", 1, "2,000 (1.60×)"},
		{"echo calls/s @64 vs sdk", 2, "1.50×"},
		{"echo calls/s @64 vs sdk", 1, "1×"},
		{"session start p50 (ms)", 0, "4.00"},
		{"session start p50 (ms)", 1, "—"},
		{"idle session RSS (MiB, of 10)", 0, "8.00"},
		{"idle session PSS (MiB)", 0, "2.00"},
		{"1000 sessions held: answered", 1, "1000/1000"},
		{"1000 sessions held: RSS / PSS (MiB)", 1, "100 / 90"},
		{"1000 sessions held: call p50 (µs)", 1, "300"},
		{"1000 sessions held: call p50 (µs)", 0, "—"},
		{"users the sessions act as", 0, "1"},
		{"users the sessions act as", 2, "16"},
		{"session start p50, user holding a session (ms)", 2, "2.00 (0.50×)"},
		{"session start p50, user holding a session (ms)", 0, "—"},
		{"processes with 10 idle sessions", 0, "10"},
		{"1000 sessions held: users", 2, "16"},
		{"1000 sessions held: processes", 2, "1,005"},
		{"1000 sessions held: PSS / call p50 vs sdk", 2, "2.00× / 1.30×"},
	}
	for _, tt := range tests {
		t.Run(tt.row, func(t *testing.T) {
			row, ok := cells[tt.row]
			if !ok {
				t.Fatalf("no row %q in\n%s", tt.row, out)
			}
			if got := row[tt.col]; got != tt.want {
				t.Errorf("column %d: got %q, want %q", tt.col, got, tt.want)
			}
		})
	}
	if _, ok := cells["echo calls/s @64 vs supergateway"]; ok {
		t.Errorf("a skipped peer got a comparison row")
	}
	for _, want := range []string{"- supergateway: skipped — npm not found", "- a note"} {
		if !strings.Contains(out, want) {
			t.Errorf("notes lack %q:\n%s", want, out)
		}
	}
}

func TestTableNotesErrors(t *testing.T) {
	r := testRun()
	r.Systems[2].Load = append(r.Systems[2].Load, LoadResult{Tool: "trivial", Sessions: 16, Errors: 2, FirstError: "session gone"})
	if out := Table(r); !strings.Contains(out, "mcpgate: trivial @16: 2 errors; first: session gone") {
		t.Errorf("errors missing from notes:\n%s", out)
	}
}

func TestCSVRecords(t *testing.T) {
	recs := CSVRecords(testRun())
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(recs); err != nil {
		t.Fatal(err)
	}
	back, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not read back: %v", err)
	}
	if got, want := back[0], []string{"system", "tool", "figure", "sessions", "value", "unit"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got header %v, want %v", got, want)
	}
	found := false
	for _, r := range back {
		if r[0] == sysMCPGate && r[2] == "p50" && r[3] == "1" {
			found = true
			if r[4] != "220.0" || r[5] != "us" {
				t.Errorf("got %v, want value 220.0 us", r)
			}
		}
		if r[0] == sysSupergateway {
			t.Errorf("skipped system has a row: %v", r)
		}
	}
	if !found {
		t.Error("no mcpgate p50 @1 row")
	}
}

func TestChart(t *testing.T) {
	r := testRun()
	r.Config.Realistic = &Tool{Label: "realistic", Name: "query"}
	b, err := Chart(r)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if got, want := img.Bounds().Dy(), 2*panelH; got != want {
		t.Errorf("got height %d, want %d (one panel per tool)", got, want)
	}
	// The floor's p50 line is drawn in its colour somewhere.
	fc := seriesColor[sysFloor]
	hit := false
	for y := 0; y < panelH && !hit; y++ {
		for x := 0; x < chartW; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r>>8 == uint32(fc.R) && g>>8 == uint32(fc.G) && b>>8 == uint32(fc.B) {
				hit = true
				break
			}
		}
	}
	if !hit {
		t.Error("no pixel in the floor's colour in the first panel")
	}
}

func modernRun() *Run {
	r := testRun()
	us := time.Microsecond
	r.Config.ModernClients = 64
	r.Config.ModernUsers = []int{1, 16}
	mr := func(users int, p50 time.Duration, cps float64, c *WorkerCensus) ModernResult {
		return ModernResult{LoadResult: load("trivial", 64, p50, 2*p50, cps), Users: users, Workers: c}
	}
	r.Systems = append(r.Systems,
		SystemResult{Name: sysSDKStateless, ModernUsers: 1, Modern: []ModernResult{mr(1, 2000*us, 20000, nil)}})
	gw := r.system(sysMCPGate)
	gw.ModernUsers = 1
	gw.Modern = []ModernResult{mr(1, 4000*us, 10000, &WorkerCensus{Workers: 1, Users: 1, PerUserRSS: 20 << 20, PerUserPSS: 5 << 20})}
	r.Systems = append(r.Systems, SystemResult{Name: sysMCPGateTLS, ModernUsers: 16, Modern: []ModernResult{
		mr(1, 5000*us, 8000, &WorkerCensus{Workers: 1, Users: 1, PerUserRSS: 20 << 20, PerUserPSS: 5 << 20}),
		mr(16, 8000*us, 5000, &WorkerCensus{Workers: 16, Users: 16, PerUserRSS: 18 << 20, PerUserPSS: 4 << 20}),
	}})
	return r
}

func TestModernTable(t *testing.T) {
	out := Table(modernRun())
	_, modern, ok := strings.Cut(out, "MCP 2026-07-28, 64 stateless clients")
	if !ok {
		t.Fatalf("no 2026-07-28 table in\n%s", out)
	}
	lines := strings.Split(modern, "\n")
	if !strings.Contains(lines[2], "sdk-stateless") || !strings.Contains(lines[2], "mcpgate-tls") || strings.Contains(lines[2], "floor") {
		t.Errorf("header: got %q, want the systems of the stateless phase only", lines[2])
	}
	for _, want := range []string{
		"echo p50 @64, 1 user (µs)", "2,000", "4,000 (2.00×)",
		"echo calls/s @64, 1 user", "10,000 (0.50×)",
		"echo p50 @64, 16 users (µs)", "8,000",
		"per-user worker processes, 16 users", "worker RSS / PSS per active user, 16 users (MiB)", "18.00 / 4.00",
		"mcpgate: 2026-07-28 with 16 users: not run; its clients can act as 1 user(s)",
		"echo calls/s @64, 16 users vs 1 user", "processes after the loop, 16 users",
	} {
		if !strings.Contains(modern, want) {
			t.Errorf("2026-07-28 table lacks %q:\n%s", want, modern)
		}
	}
	// The sessions' table is unchanged by the phase: no sdk-stateless column.
	sessions, _, _ := strings.Cut(out, "MCP 2026-07-28")
	if first := strings.SplitN(sessions, "\n", 2)[0]; strings.Contains(first, "sdk-stateless") {
		t.Errorf("sessions' table header %q has the stateless-only system", first)
	}
	if plain := Table(testRun()); strings.Contains(plain, "2026-07-28") {
		t.Errorf("a run without the phase printed its table:\n%s", plain)
	}
}

func TestModernCSVRecords(t *testing.T) {
	recs := CSVRecords(modernRun())
	want := map[string]bool{
		"mcpgate-tls,trivial,mcp2026_users16_p50,64,8000.0,us":                     false,
		"mcpgate-tls,trivial,mcp2026_users16_user_workers,64,16,count":             false,
		"mcpgate-tls,trivial,mcp2026_users16_worker_pss_per_user,64,4194304,bytes": false,
		"sdk-stateless,trivial,mcp2026_users1_calls_per_sec,64,20000.0,1/s":        false,
	}
	for _, r := range recs {
		k := strings.Join(r, ",")
		if _, ok := want[k]; ok {
			want[k] = true
		}
		if r[0] == sysSDKStateless && strings.HasSuffix(r[2], "_user_workers") {
			t.Errorf("a census row for a system without per-user workers: %q", r)
		}
	}
	for k, found := range want {
		if !found {
			t.Errorf("no CSV row %q", k)
		}
	}
}

func TestModernChart(t *testing.T) {
	b, err := Chart(modernRun())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if got, want := img.Bounds().Dy(), 2*panelH; got != want {
		t.Fatalf("got height %d, want %d (the sessions' panel and the 2026-07-28 one)", got, want)
	}
	// sdk-stateless ran only the stateless phase: its colour is in the
	// second panel and not in the first.
	sc := seriesColor[sysSDKStateless]
	in := func(y0, y1 int) bool {
		for y := y0; y < y1; y++ {
			for x := 0; x < chartW; x++ {
				if r, g, b, _ := img.At(x, y).RGBA(); r>>8 == uint32(sc.R) && g>>8 == uint32(sc.G) && b>>8 == uint32(sc.B) {
					return true
				}
			}
		}
		return false
	}
	if in(0, panelH) || !in(panelH, 2*panelH) {
		t.Errorf("sdk-stateless colour: in the sessions' panel %v, in the 2026-07-28 panel %v; want false, true", in(0, panelH), in(panelH, 2*panelH))
	}
}
