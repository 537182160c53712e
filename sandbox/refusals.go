package sandbox

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"strings"
)

// refusal matches a system call the kernel refused in strace's output: the
// call with its arguments, and the errno (not ENOSYS: clone3's, on which
// programs fall back to clone).
var refusal = regexp.MustCompile(`^(?:\d+\s+)?(\w+\(.*\)) += -1 (EACCES|EPERM|EPROTONOSUPPORT) `)

// Refusals reads the output of strace -f (mcpgate sandbox check's) and
// returns each refused system call once, as "call(args) = ERRNO", in the
// order they came.
func Refusals(trace io.Reader) ([]string, error) {
	var seen []string
	sc := bufio.NewScanner(trace)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		r := refusal.FindStringSubmatch(sc.Text())
		// epoll_ctl answers EPERM for a regular file, which Go's runtime
		// (the helper's, a Go server's) tries on every file it opens.
		if r == nil || strings.HasPrefix(r[1], "epoll_ctl(") {
			continue
		}
		if line := r[1] + " = " + r[2]; !slices.Contains(seen, line) {
			seen = append(seen, line)
		}
	}
	return seen, sc.Err()
}
