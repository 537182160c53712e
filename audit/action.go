package audit

import (
	"log/slog"
	"time"
)

// Action is an operator's action in the operator view (web/): its login,
// and each worker it ended, recorded as that operator's.
type Action struct {
	Time        time.Time
	Name        string // the event: "admin/login", "admin/end"
	Admin       string // the operator's user name
	AdminIssuer string
	AdminSub    string
	Outcome     string // "ok", "refused", "notFound"
	// The worker an admin/end named, when it ran here.
	TargetKind, TargetID, TargetUser string
	TargetPid                        int
}

// Action records one operator action in the same trail as the calls.
func (l *Log) Action(a Action) {
	as := []slog.Attr{
		slog.String("admin", a.Admin),
		slog.String("admin_issuer", a.AdminIssuer),
		slog.String("admin_sub", a.AdminSub),
		slog.String("outcome", a.Outcome),
	}
	if a.TargetKind != "" {
		as = append(as,
			slog.String("worker_kind", a.TargetKind),
			slog.String("target", a.TargetID),
			slog.String("user", a.TargetUser),
			slog.Int("worker_pid", a.TargetPid))
	}
	l.emit(a.Time, a.Name, as, "admin", a.Admin, "event", a.Name)
}
