package credential

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// HeaderFeedFD is the upstream worker's fd of its HeaderFeed: the first
// file the gateway hands it (a remote server's worker gets no other).
const HeaderFeedFD = 3

// headerLines is h in the headers-file form the upstream worker reads
// (bridge.ParseHeaders): one "Name: value" line per value, names in
// sorted order; a name or value that cannot be one is refused.
func headerLines(h http.Header) (string, error) {
	var b strings.Builder
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !headerName.MatchString(n) {
			return "", fmt.Errorf("credential: %q is not an HTTP header name", n)
		}
		for _, v := range h[n] {
			if strings.ContainsAny(v, "\r\n\x00") {
				return "", fmt.Errorf("credential: the value of header %s holds a line break or NUL", n)
			}
			b.WriteString(n + ": " + v + "\n")
		}
	}
	return b.String(), nil
}
