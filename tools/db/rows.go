package db

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Rows is a capped result set.
type Rows struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
	// Total is the number of rows the statement returned, counted past the
	// cap, so a caller can say "showing 500 of 12,345"; counting stops at
	// CountLimit, and TotalAtLeast then says the true total is larger.
	Total        int  `json:"total"`
	TotalAtLeast bool `json:"totalAtLeast,omitempty"`
	Truncated    bool `json:"truncated"`
	// Oversize counts rows left out because each alone is over MaxBytes.
	Oversize int `json:"oversize,omitempty"`
	// RowTooLarge says the result stops early: the driver could not read
	// the next row within MaxRowBytes. Total counts the rows before it.
	RowTooLarge bool `json:"rowTooLarge,omitempty"`
}

// MaxBytes caps the bytes of values one result keeps; rows past it are
// counted but not kept, as rows past the row cap are.
const MaxBytes = 1 << 20

// MaxRowBytes bounds the bytes of one row while the driver reads it, before
// any value is cut: SQLite's whole heap (PRAGMA hard_heap_limit, which a
// statement can lower but never raise), PostgreSQL's DataRow message. A
// row over it ends a result there (SQLite; Scan reports ErrRowTooLarge as
// RowTooLarge) or fails the statement (PostgreSQL).
const MaxRowBytes = 128 << 20

// ErrRowTooLarge is what an engine's rows report when the next row does not
// fit in MaxRowBytes; the rows read before it are whole.
var ErrRowTooLarge = fmt.Errorf("db: a row of the result is over the %d MiB row bound", MaxRowBytes>>20)

// CountLimit bounds how far past the row cap a result is counted, so that
// a huge result costs a bounded scan rather than a statement timeout.
const CountLimit = 1_000_000

// DefaultMaxCell caps one value's text in a result.
const DefaultMaxCell = 4096

// Collect reads rows, keeping at most maxRows and cutting long values to
// maxCell bytes (0: no cut), and counts the rest. It closes rows.
func Collect(rows *sql.Rows, maxRows, maxCell int) (*Rows, error) {
	return collect(rows, maxRows, maxCell, CountLimit)
}

func collect(rows *sql.Rows, maxRows, maxCell, countLimit int) (*Rows, error) {
	keep := maxCell
	if keep > 0 {
		// Enough of a long value for its text form: the bytes themselves, or
		// half as many in hex.
		keep += utf8.UTFMax
	}
	p, err := scan(rows, maxRows, keep, countLimit, func(vals []any) ([]any, int) {
		row, size := make([]any, len(vals)), 0
		for i, v := range vals {
			row[i] = Normalize(v, maxCell)
			if s, ok := row[i].(string); ok {
				size += len(s)
			} else {
				size += 8
			}
		}
		return row, size
	})
	if err != nil {
		return nil, err
	}
	return &Rows{Columns: p.Columns, Rows: p.Items, Total: p.Total, TotalAtLeast: p.TotalAtLeast, Truncated: p.Truncated, Oversize: p.Oversize, RowTooLarge: p.RowTooLarge}, nil
}

// Page is what Scan keeps of a result.
type Page[T any] struct {
	Columns      []string
	Items        []T
	Total        int  // rows counted, up to CountLimit
	TotalAtLeast bool // counting stopped at CountLimit
	Truncated    bool // fewer items than rows
	Oversize     int  // rows left out because each alone is over MaxBytes
	RowTooLarge  bool // the result stops at a row over MaxRowBytes
}

// Long stands for a text or byte value longer than a scan keeps: its first
// bytes and its true length. Scanning it copies only Head, so a huge value
// costs no more than the driver's own copy.
type Long struct {
	Head []byte
	Len  int
	Text bool // the value was text (a string), not bytes
}

// Scan reads rows, turning each into an item with convert (which also
// returns its size in bytes). A text or byte value longer than maxValue
// bytes (0: no limit) reaches convert as a Long. Scan keeps items while
// there are fewer than maxRows and their sizes add up to at most MaxBytes;
// an item over MaxBytes by itself is left out and counted in Oversize, and
// later items are still kept. It counts the rest up to CountLimit and
// closes rows. A row over MaxRowBytes (ErrRowTooLarge) ends the page
// there, with RowTooLarge set, rather than failing it.
func Scan[T any](rows *sql.Rows, maxRows, maxValue int, convert func(vals []any) (T, int)) (*Page[T], error) {
	return scan(rows, maxRows, maxValue, CountLimit, convert)
}

func scan[T any](rows *sql.Rows, maxRows, maxValue, countLimit int, convert func(vals []any) (T, int)) (*Page[T], error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	p := &Page[T]{Columns: cols, Items: []T{}}
	cells := make([]cell, len(cols))
	ptrs := make([]any, len(cols))
	vals := make([]any, len(cols))
	for i := range cells {
		cells[i].max = maxValue
		ptrs[i] = &cells[i]
	}
	size, full := 0, false
	kept := false // the last row read was kept
	for rows.Next() {
		kept = false
		if p.Total == countLimit {
			p.TotalAtLeast = true
			break
		}
		p.Total++
		if full || len(p.Items) >= maxRows {
			p.Truncated = true
			continue
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i := range cells {
			vals[i] = cells[i].v
		}
		item, n := convert(vals)
		switch {
		case n > MaxBytes:
			p.Oversize++
			p.Truncated = true
		case size+n > MaxBytes:
			full, p.Truncated = true, true
		default:
			size += n
			p.Items = append(p.Items, item)
			kept = true
		}
	}
	err = rows.Err()
	if errors.Is(err, ErrRowTooLarge) {
		// The engine may find it out only after handing over the row
		// it could not read whole (SQLite), so that row goes too.
		if kept {
			p.Items = p.Items[:len(p.Items)-1]
		}
		if p.Total > 0 {
			p.Total--
		}
		p.RowTooLarge, p.Truncated, p.TotalAtLeast = true, true, true
		return p, nil
	}
	return p, err
}

// cell scans one value. database/sql hands a Scanner the driver's own bytes
// (https://pkg.go.dev/database/sql#Scanner), so a long value is cut here,
// before any copy, where scanning into an any would clone it whole.
type cell struct {
	v   any
	max int
}

// Scan keeps src, copying at most max bytes of a text or byte value.
func (c *cell) Scan(src any) error {
	switch x := src.(type) {
	case []byte:
		if c.max > 0 && len(x) > c.max {
			c.v = Long{Head: bytes.Clone(x[:c.max]), Len: len(x)}
		} else {
			c.v = bytes.Clone(x)
		}
	case string:
		if c.max > 0 && len(x) > c.max {
			c.v = Long{Head: []byte(x[:c.max]), Len: len(x), Text: true}
		} else {
			c.v = x
		}
	default:
		c.v = x
	}
	return nil
}

// Normalize turns a driver value into a JSON-friendly one: text for bytes
// (hex when not UTF-8) and times, long text cut to maxCell bytes. A Long is
// shown as text when its head is UTF-8 (the rest is not looked at).
func Normalize(v any, maxCell int) any {
	switch x := v.(type) {
	case []byte:
		if utf8.Valid(x) {
			return cut(string(x), maxCell)
		}
		return cut(`\x`+hex.EncodeToString(x), maxCell)
	case Long:
		head := x.Head
		// A rune cut off at the end of the head is not an encoding error.
		for i := 0; i < utf8.UTFMax && len(head) > 0 && !utf8.Valid(head); i++ {
			head = head[:len(head)-1]
		}
		if x.Text || utf8.Valid(head) && len(head) > 0 {
			return cutTo(string(head), maxCell, x.Len)
		}
		return cutTo(`\x`+hex.EncodeToString(x.Head), maxCell, 2+2*x.Len)
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

func cut(s string, limit int) string {
	return cutTo(s, limit, len(s))
}

// Cut cuts s to limit bytes at a rune boundary, marked as a long value of
// a result is: "… [N bytes]" with s's true length. A limit of 0 keeps s.
func Cut(s string, limit int) string { return cut(s, limit) }

// cutTo cuts s, the start of a value of total bytes, to limit bytes at a
// rune boundary and says how long the value was.
func cutTo(s string, limit, total int) string {
	if limit <= 0 || total <= limit {
		return s
	}
	c := min(limit, len(s))
	for c > 0 && c < len(s) && !utf8.RuneStart(s[c]) {
		c--
	}
	return s[:c] + fmt.Sprintf("… [%d bytes]", total)
}

// Note says how much of the result is shown.
func (r *Rows) Note() string {
	if r.RowTooLarge {
		return fmt.Sprintf("(showing %d of at least %d rows; the result stops at the next row, which is over the %d MiB row bound: select fewer or shorter columns)", len(r.Rows), r.Total+1, MaxRowBytes>>20)
	}
	if r.TotalAtLeast {
		return fmt.Sprintf("(showing %d of more than %d rows)", len(r.Rows), r.Total)
	}
	if r.Oversize > 0 {
		return fmt.Sprintf("(showing %d of %d rows; %d left out, each over the %d-byte result cap)", len(r.Rows), r.Total, r.Oversize, MaxBytes)
	}
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

// MaxCatalogBytes bounds the text one catalog query (Select) reads in all.
// A user who may create tables can give them, their columns, indexes and
// triggers names as long as a request allows (SQLite sets no limit on a
// name), as many as they like, and every other user's list_tables reads
// every name. A variable so that tests can lower it.
var MaxCatalogBytes = 64 << 20

// Select runs a query and scans every row with scan. Catalog queries use
// it. Past MaxCatalogBytes of text in all it stops with kind refused.
func Select[T any](ctx context.Context, q Querier, scan func(*sql.Rows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	total := 0
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		if total += textSize(reflect.ValueOf(v)); total > MaxCatalogBytes {
			return nil, Errorf(KindRefused, "db: the catalog's answer is over %d MiB: some objects have names or definitions far longer than any needs (whoever made them can rename or drop them); ask for one schema or one name", MaxCatalogBytes>>20)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// textSize is the bytes of the strings and byte slices in v.
func textSize(v reflect.Value) int {
	n := 0
	switch v.Kind() {
	case reflect.String:
		n = v.Len()
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			n = textSize(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			n += textSize(v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Len()
		}
		for i := range v.Len() {
			n += textSize(v.Index(i))
		}
	}
	return n
}

// Strings runs a query that yields one text column.
func Strings(ctx context.Context, q Querier, query string, args ...any) ([]string, error) {
	return Select(ctx, q, func(r *sql.Rows) (s string, err error) { return s, r.Scan(&s) }, query, args...)
}

// Literal renders a value as an SQL literal; the engine supplies the forms
// that differ (booleans, byte strings).
func Literal(v any, boolean func(bool) string, bytes func([]byte) string) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return boolean(x)
	case []byte:
		return bytes(x)
	case time.Time:
		return StringLiteral(x.Format(time.RFC3339Nano))
	case string:
		return StringLiteral(x)
	default:
		return StringLiteral(fmt.Sprint(x))
	}
}

// StringLiteral quotes s as a standard SQL string literal.
func StringLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
