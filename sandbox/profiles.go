package sandbox

import (
	"slices"
)

// SystemRead are the paths every external worker may read and execute:
// programs and their libraries, the dynamic loader's cache, certificates,
// time zones, name resolution, the account database (no passwords: those
// are in /etc/shadow, which is not here), a few of /proc's system-wide
// files and the process's own /proc entry, and the random devices.
var SystemRead = []string{
	"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/localtime", "/etc/timezone",
	"/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
	"/etc/services", "/etc/protocols", "/etc/passwd", "/etc/group", "/etc/mime.types", "/etc/locale.alias",
	"/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/uptime", "/proc/version",
	"/sys/devices/system/cpu", "/sys/fs/cgroup",
	"/dev/urandom", "/dev/random",
}

// SystemWrite are the devices every worker may write: /dev/null and its
// kin.
var SystemWrite = []string{"/dev/null", "/dev/zero", "/dev/full"}

// External is the default profile of an external worker command, widened
// by base (the operator's worker.sandbox): the system paths, the program
// itself, its working directory dir (worker.dir; read only), and base's
// paths and ports.
func External(base Spec, program, dir string) Spec {
	s := base
	s.Profile = ProfileExternal
	s.Read = slices.Concat(SystemRead, nonEmpty(program, dir), base.Read)
	s.Write = slices.Concat(SystemWrite, base.Write)
	return s
}

// Builtin is the built-in worker's profile, widened by base: its own
// executable, the random devices, /dev/null, its database's files (write
// for SQLite's directory: the journal, WAL and shared-memory files live
// beside the database) and, for PostgreSQL, what a client reads (name
// resolution, certificates, the password file) and the server's ports.
func Builtin(base Spec, exe string, db DB) Spec {
	s := base
	s.Profile = ProfileBuiltin
	s.Read = slices.Concat(nonEmpty(exe), []string{"/dev/urandom"}, db.Read, base.Read)
	s.Write = slices.Concat([]string{"/dev/null"}, db.Write, base.Write)
	s.Connect = slices.Concat(base.Connect, db.Connect)
	return s
}

// DB is what the built-in worker's database needs.
type DB struct {
	Read, Write []string
	Connect     []uint16
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
