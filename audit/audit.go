// Package audit writes the audit trail: one JSON event per tools/call and
// per refusal (gateway.CallEvent), to a JSON-lines file opened for append
// and reopened on demand (log rotation), and/or to the main log. Events are
// written with log/slog, whose JSON handler writes one line per record in
// one write. An event never holds the token or a DSN; the tool's arguments
// only when asked, each value cut and chosen names redacted.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/gateway"
)

// DefaultMaxArgumentBytes is Options.MaxArgumentBytes when zero.
const DefaultMaxArgumentBytes = 256

// Redacted replaces the value of an argument named in Options.Redact.
const Redacted = "[redacted]"

// Options configure a Log.
type Options struct {
	// Path is the JSON-lines file events are appended to; empty means none.
	// It is created with mode 0600 when missing.
	Path string
	// Logger, when set, receives every event too, at level info with the
	// message "audit". Set it to the main log.
	Logger *slog.Logger
	// Arguments includes each call's arguments in its event.
	Arguments bool
	// MaxArgumentBytes cuts each argument value longer than this, as JSON
	// text (default DefaultMaxArgumentBytes).
	MaxArgumentBytes int
	// Redact names arguments whose values are replaced by Redacted
	// (compared without regard to case; top-level names only).
	Redact []string
	// ErrorLog receives a line for each event the file could not take;
	// nil means slog.Default().
	ErrorLog *slog.Logger
	// OnWriteError is called for each event the file could not take (a
	// metric); nil means nothing beyond the log line.
	OnWriteError func()
}

// Log is the audit trail: a gateway.Observer of tools/calls and refusals.
type Log struct {
	gateway.NopObserver
	opts   Options
	redact map[string]bool
	file   *reopener    // nil without a Path
	h      slog.Handler // JSON lines on file
}

// Open opens the audit trail. A Path that cannot be opened for append is an
// error here, at start, rather than events lost later.
func Open(opts Options) (*Log, error) {
	if opts.MaxArgumentBytes <= 0 {
		opts.MaxArgumentBytes = DefaultMaxArgumentBytes
	}
	if opts.ErrorLog == nil {
		opts.ErrorLog = slog.Default()
	}
	l := &Log{opts: opts, redact: make(map[string]bool, len(opts.Redact))}
	for _, n := range opts.Redact {
		l.redact[strings.ToLower(n)] = true
	}
	if opts.Path != "" {
		f, err := openAppend(opts.Path)
		if err != nil {
			return nil, err
		}
		l.file = &reopener{path: opts.Path, f: f}
		l.h = slog.NewJSONHandler(l.file, &slog.HandlerOptions{ReplaceAttr: eventAttr})
	}
	return l, nil
}

func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: cannot open audit.path for append: %w", err)
	}
	return f, nil
}

// eventAttr shapes slog's JSON record as an audit line: the message is the
// event's name, there is no level.
func eventAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.LevelKey:
		return slog.Attr{}
	case slog.MessageKey:
		a.Key = "event"
	}
	return a
}

// Reopen opens Path afresh and switches to it, for log rotation (SIGHUP):
// a rotated file is closed once no event is being written to it. On error
// the old file stays in use.
func (l *Log) Reopen() error {
	if l.file == nil {
		return nil
	}
	return l.file.reopen()
}

// Close closes the file.
func (l *Log) Close() error {
	if l.file == nil {
		return nil
	}
	return l.file.close()
}

// Call records one event. The fields are built once for both sinks, and the
// main log's handler is called directly: slog.Logger.LogAttrs would walk
// the stack (runtime.Callers) for a source no handler here prints, on
// every call the gateway forwards.
func (l *Log) Call(e *gateway.CallEvent) {
	name := e.Method
	if name == "" {
		name = "request"
	}
	var buf [18]slog.Attr
	l.emit(e.Time, name, l.appendAttrs(buf[:0], e), "user", e.User, "tool", e.Tool, "decision", e.Decision)
}

// emit writes one event named name to the file and the main log; ids name
// it in the error log when the file cannot take it.
func (l *Log) emit(t time.Time, name string, as []slog.Attr, ids ...any) {
	ctx := context.Background()
	if l.h != nil {
		r := slog.NewRecord(t, slog.LevelInfo, name, 0)
		r.AddAttrs(as...)
		if err := l.h.Handle(ctx, r); err != nil {
			if l.opts.OnWriteError != nil {
				l.opts.OnWriteError()
			}
			l.opts.ErrorLog.Error("audit: an event could not be written to audit.path; fix the file or its disk",
				append([]any{"path", l.opts.Path, "err", err}, ids...)...)
		}
	}
	if lg := l.opts.Logger; lg != nil && lg.Enabled(ctx, slog.LevelInfo) {
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "audit", 0)
		r.AddAttrs(slog.String("event", name))
		r.AddAttrs(as...)
		_ = lg.Handler().Handle(ctx, r)
	}
}

// appendAttrs appends the event's fields to as (docs/operations.md, "Audit
// trail").
func (l *Log) appendAttrs(as []slog.Attr, e *gateway.CallEvent) []slog.Attr {
	if e.Server != "" {
		as = append(as, slog.String("server", e.Server))
	}
	as = append(as,
		slog.String("user", e.User),
		slog.String("client_id", e.ClientID),
		slog.String("issuer", e.Issuer),
		slog.String("session", e.Session),
		slog.String("worker_key", e.WorkerKey),
		slog.String("worker_kind", e.WorkerKind),
		slog.Int("worker_pid", e.WorkerPid),
		slog.String("tool", e.Tool),
		slog.Bool("read_only", e.ReadOnly),
		slog.String("decision", e.Decision),
		slog.Float64("duration_ms", float64(e.Duration)/float64(time.Millisecond)),
		slog.String("outcome", e.Outcome),
		slog.String("protocol", e.Protocol),
		slog.String("request_id", e.RequestID),
	)
	if e.Status != 0 {
		as = append(as, slog.Int("status", e.Status))
	}
	if e.ErrorCode != 0 {
		as = append(as, slog.Int("error_code", e.ErrorCode))
	}
	if e.ErrorKind != "" {
		as = append(as, slog.String("error_kind", e.ErrorKind))
	}
	if e.ErrorLimit != "" {
		as = append(as, slog.String("error_limit", e.ErrorLimit))
	}
	if l.opts.Arguments && e.Arguments != nil {
		as = append(as, slog.Any("arguments", l.arguments(e.Arguments)))
	}
	return as
}

// arguments returns the arguments to record: each top-level value kept as
// JSON when at most MaxArgumentBytes long, else cut to that many bytes as
// text; redacted names replaced. Arguments that are not an object are one
// value.
func (l *Log) arguments(raw json.RawMessage) any {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return l.value(raw)
	}
	out := make(map[string]any, len(args))
	for name, v := range args {
		if l.redact[strings.ToLower(name)] {
			out[name] = Redacted
			continue
		}
		out[name] = l.value(v)
	}
	return out
}

// value is one argument value, cut when too long.
func (l *Log) value(v json.RawMessage) any {
	limit := l.opts.MaxArgumentBytes
	if len(v) <= limit && json.Valid(v) {
		return v
	}
	text := string(v)
	var s string
	if json.Unmarshal(v, &s) == nil {
		text = s
		if len(text) <= limit {
			return text
		}
	}
	n := limit
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + "…(cut, " + strconv.Itoa(len(text)) + " bytes)"
}

// reopener is the audit file, swapped by reopen while writes go on.
type reopener struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func (r *reopener) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, errors.New("audit: the audit file is closed")
	}
	return r.f.Write(p)
}

func (r *reopener) reopen() error {
	f, err := openAppend(r.path)
	if err != nil {
		return err
	}
	r.mu.Lock()
	old := r.f
	r.f = f
	r.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

func (r *reopener) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
