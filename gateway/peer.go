package gateway

import (
	"strconv"
	"unicode/utf8"
)

// maxPeerString bounds a string a peer chose (a tool name, a method, an id,
// a Host or Origin header, a protocol version) wherever the gateway logs it
// or echoes it in an answer: the body limit allows megabytes, a log line or
// an error message should not carry them (docs/design.md, Echoed input).
const maxPeerString = 256

// clip returns s when it is at most maxPeerString bytes; else its first
// maxPeerString bytes, cut at a rune boundary, and a note of its length.
// Every peer string the gateway logs or echoes goes through it.
func clip(s string) string {
	if len(s) <= maxPeerString {
		return s
	}
	n := maxPeerString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…(cut, " + strconv.Itoa(len(s)) + " bytes)"
}
