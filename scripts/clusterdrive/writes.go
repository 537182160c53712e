package main

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

func (d *driver) sql(q string) error {
	if d.dsn == "" {
		return errors.New("no --dsn")
	}
	conn, err := pgx.Connect(d.ctx, d.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(d.ctx)
	_, err = conn.Exec(d.ctx, q)
	return err
}

// checkWrites reads PostgreSQL directly: every acknowledged write is
// there, written through every replica.
func (d *driver) checkWrites() {
	conn, err := pgx.Connect(d.ctx, d.dsn)
	if err != nil {
		fatal("connecting to PostgreSQL: %v", err)
	}
	defer conn.Close(d.ctx)
	rows, err := conn.Query(d.ctx, "SELECT client, seq, via FROM cluster_writes")
	if err != nil {
		fatal("reading cluster_writes: %v", err)
	}
	have, via := map[string]bool{}, map[string]int{}
	for rows.Next() {
		var c, v string
		var s int
		if err := rows.Scan(&c, &s, &v); err != nil {
			fatal("reading cluster_writes: %v", err)
		}
		have[c+"/"+strconv.Itoa(s)] = true
		via[v]++
	}
	if rows.Err() != nil {
		fatal("reading cluster_writes: %v", rows.Err())
	}
	var lost []string
	for k := range d.acked {
		if !have[k] {
			lost = append(lost, k)
		}
	}
	sort.Strings(lost)
	d.check(fmt.Sprintf("all %d acknowledged writes are in PostgreSQL (%d rows; by replica %v)", len(d.acked), len(have), via), len(lost) == 0,
		fmt.Sprintf("missing: %v", lost))
	every := true
	for _, r := range d.replicas {
		every = every && via[r] > 0
	}
	d.check("writes went through every replica", every, fmt.Sprintf("by replica %v", via))
}

// reportMetrics prints each replica's settled tool calls from /metrics.
func (d *driver) reportMetrics() {
	for _, r := range d.replicas {
		addr, ok := d.metrics[r]
		if !ok || r == d.stop {
			continue
		}
		n, err := toolCalls("http://" + addr + "/metrics")
		d.check(fmt.Sprintf("%s's /metrics counts its tool calls: %d", r, n), err == nil && n > 0, fmt.Sprint(err))
	}
}

func toolCalls(u string) (int, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	total := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "mcpgate_tool_calls_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, err
		}
		total += int(v)
	}
	return total, sc.Err()
}
