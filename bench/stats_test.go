package main

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	hundred := make(Latencies, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Microsecond
	}
	tests := []struct {
		name   string
		sorted Latencies
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample is every percentile", Latencies{7}, 99, 7},
		{"p50 of 1..100 is 50", hundred, 50, 50 * time.Microsecond},
		{"p99 of 1..100 is 99, not rounded up", hundred, 99, 99 * time.Microsecond},
		{"p100 is the max", hundred, 100, 100 * time.Microsecond},
		{"p0 is the min", hundred, 0, 1 * time.Microsecond},
		{"p50 of an even pair is the lower (nearest rank)", Latencies{1, 2}, 50, 1},
		{"p50 of three is the middle", Latencies{1, 2, 3}, 50, 2},
		{"p99 of ten is the max", Latencies{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
		{"p90 of ten is the ninth", Latencies{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(p%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t.Run("empty is zero", func(t *testing.T) {
		if got := Summarize(nil); got != (Summary{}) {
			t.Errorf("got %+v, want zero", got)
		}
	})
	t.Run("unsorted input, not modified", func(t *testing.T) {
		in := Latencies{30, 10, 20, 40}
		got := Summarize(in)
		want := Summary{Count: 4, P50: 20, P90: 40, P99: 40, Max: 40, Mean: 25}
		if got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
		if in[0] != 30 {
			t.Errorf("input was sorted in place: got %v", in)
		}
	})
}

func TestMerge(t *testing.T) {
	got := Merge(Latencies{1, 2}, nil, Latencies{3})
	if len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Errorf("got %v, want [1 2 3]", got)
	}
}
