package db

import (
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Rows is a capped result set.
type Rows struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
	// Total is the number of rows the statement returned, counted past the
	// cap, so a caller can say "showing 500 of 12,345".
	Total     int  `json:"total"`
	Truncated bool `json:"truncated"`
}

// DefaultMaxCell caps one value's text in a result.
const DefaultMaxCell = 4096

// Collect reads rows, keeping at most maxRows and cutting long values to
// maxCell bytes (0: no cut), and counts the rest. It closes rows.
func Collect(rows *sql.Rows, maxRows, maxCell int) (*Rows, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := &Rows{Columns: cols, Rows: [][]any{}}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		out.Total++
		if len(out.Rows) >= maxRows {
			out.Truncated = true
			continue
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]any, len(cols))
		for i, v := range vals {
			row[i] = Normalize(v, maxCell)
		}
		out.Rows = append(out.Rows, row)
	}
	return out, rows.Err()
}

// Normalize turns a driver value into a JSON-friendly one: text for bytes
// (hex when not UTF-8) and times, long text cut to maxCell bytes.
func Normalize(v any, maxCell int) any {
	switch x := v.(type) {
	case []byte:
		if utf8.Valid(x) {
			return cut(string(x), maxCell)
		}
		return cut(`\x`+hex.EncodeToString(x), maxCell)
	case string:
		return cut(x, maxCell)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case int64, float64, bool, nil:
		return x
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case float32:
		return float64(x)
	default:
		return cut(fmt.Sprint(x), maxCell)
	}
}

func cut(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	c := max
	for c > 0 && !utf8.RuneStart(s[c]) {
		c--
	}
	return s[:c] + fmt.Sprintf("… [%d bytes]", len(s))
}

// Note says how much of the result is shown.
func (r *Rows) Note() string {
	if r.Truncated {
		return fmt.Sprintf("(showing %d of %d rows)", len(r.Rows), r.Total)
	}
	if r.Total == 1 {
		return "(1 row)"
	}
	return fmt.Sprintf("(%d rows)", r.Total)
}

// Text renders the rows as an aligned text table followed by the note.
func (r *Rows) Text() string {
	const maxWidth = 60
	cells := make([][]string, 0, len(r.Rows)+1)
	cells = append(cells, r.Columns)
	for _, row := range r.Rows {
		line := make([]string, len(row))
		for i, v := range row {
			line[i] = display(v, maxWidth)
		}
		cells = append(cells, line)
	}
	widths := make([]int, len(r.Columns))
	for _, line := range cells {
		for i, c := range line {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for n, line := range cells {
		for i, c := range line {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(c)
			if i < len(line)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
			}
		}
		b.WriteByte('\n')
		if n == 0 {
			for i, w := range widths {
				if i > 0 {
					b.WriteString("-+-")
				}
				b.WriteString(strings.Repeat("-", w))
			}
			b.WriteByte('\n')
		}
	}
	b.WriteString(r.Note())
	return b.String()
}

func display(v any, maxWidth int) string {
	if v == nil {
		return "NULL"
	}
	s := strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(fmt.Sprint(v))
	if utf8.RuneCountInString(s) > maxWidth {
		rs := []rune(s)
		s = string(rs[:maxWidth-1]) + "…"
	}
	return s
}
