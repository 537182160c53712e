package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// fmtDur prints a latency in the unit a reader compares at a glance: µs
// below 10 ms, ms above. Zero (nothing measured) is "—".
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < 10*time.Millisecond:
		return fmtMicros(d) + " µs"
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

// fmtMicros prints d in whole microseconds with thousands separators, or
// with one decimal below 10 µs.
func fmtMicros(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	if us < 10 {
		return strconv.FormatFloat(us, 'f', 1, 64)
	}
	return thousands(int64(us + 0.5))
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// ratio prints a/b as "2.5×"; "—" when either is missing.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "—"
	}
	r := a / b
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f×", r)
	case r >= 10:
		return fmt.Sprintf("%.1f×", r)
	default:
		return fmt.Sprintf("%.2f×", r)
	}
}

// withRatio prints "value (ratio)" unless this is the base column.
func withRatio(value string, a, base float64, isBase bool) string {
	if value == "—" || isBase || base <= 0 {
		return value
	}
	return value + " (" + ratio(a, base) + ")"
}

// fmtMicros0 is fmtMicros with "—" for nothing measured.
func fmtMicros0(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return fmtMicros(d)
}

// writeResults writes results.json, results.csv, table.md and latency.png
// into dir.
func writeResults(r *Run, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mcpbench: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("mcpbench: encode results: %w", err)
	}
	var csvb strings.Builder
	w := csv.NewWriter(&csvb)
	_ = w.WriteAll(CSVRecords(r)) // a strings.Builder does not fail
	png, err := Chart(r)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"results.json": append(js, '\n'),
		"results.csv":  []byte(csvb.String()),
		"table.md":     []byte(Table(r)),
		"latency.png":  png,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("mcpbench: %w", err)
		}
	}
	return nil
}
