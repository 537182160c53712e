package sqlite_test

import (
	"context"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
)

// BenchmarkSessionStatus and BenchmarkSessionQuery are the database's part
// of the benchmark's two tools (tools.BenchmarkStatus, BenchmarkQuery):
// Session.Status, and the query tool's read of the benchmark's text.
func BenchmarkSessionStatus(b *testing.B) {
	s := benchSession(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Status(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSessionQuery(b *testing.B) {
	s := benchSession(b)
	b.ReportAllocs()
	for b.Loop() {
		err := s.Read(b.Context(), func(ctx context.Context, q db.Querier) error {
			r, err := q.QueryContext(ctx, "SELECT * FROM order_totals ORDER BY order_id")
			if err != nil {
				return err
			}
			_, err = db.Collect(r, 500, db.DefaultMaxCell)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchSession(b *testing.B) *db.Session {
	s, err := db.Open(b.Context(), sqlite.Engine{}, dbtest.Config(b, db.SQLite), "ada", false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkOpen is db.Open of a session, read-write and read-only, with
// no other connection to the file (as a pool's first session finds it):
// the database part of a pre-started worker's session start.
func BenchmarkOpen(b *testing.B) {
	for _, ro := range []bool{false, true} {
		b.Run(map[bool]string{false: "rw", true: "ro"}[ro], func(b *testing.B) {
			cfg := dbtest.Config(b, db.SQLite)
			for b.Loop() {
				s, err := db.Open(b.Context(), sqlite.Engine{}, cfg, "ada", ro)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
	}
}
