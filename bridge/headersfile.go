package bridge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"
)

// MaxHeadersFileBytes bounds a headers file.
const MaxHeadersFileBytes = 64 << 10

// ErrHeadersFile is wrapped by every error of HeadersFile.Header.
var ErrHeadersFile = errors.New("bridge: headers file")

// HeadersFile is a file of headers to send with every request to a remote
// server (Options.Header): one `Name: value` a line; blank lines and
// lines starting with # are skipped. It holds a credential, so it must be
// a regular file of the process's own user that no one else may read or
// write (mode 0600 or 0400), or it is refused. It is read again when it
// changes (another file in its place, another size, modification time,
// mode or owner),
// so a credential rewritten by another program takes effect with the next
// request; such a program should write a new file and rename it into
// place, so that no request reads half of it. Errors name the file, the
// line and the header, never a value.
type HeadersFile struct {
	Path string

	mu sync.Mutex
	fi os.FileInfo // of the version in h
	h  http.Header
}

// reservedHeaders are the headers the relay sets itself (the protocol's
// and the connection's): a headers file that sets one is refused.
var reservedHeaders = map[string]bool{
	"Accept": true, "Connection": true, "Content-Length": true, "Content-Type": true,
	"Expect": true, "Host": true, "Keep-Alive": true, "Last-Event-Id": true,
	"Mcp-Method": true, "Mcp-Name": true, "Mcp-Protocol-Version": true, "Mcp-Session-Id": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// ReservedHeader reports whether the relay sets the header name itself,
// so that no headers file or credential may.
func ReservedHeader(name string) bool {
	name = http.CanonicalHeaderKey(name)
	return reservedHeaders[name] || strings.HasPrefix(name, "Mcp-")
}

// Header returns the file's headers, reading the file again when it
// changed since the last call.
func (f *HeadersFile) Header() (http.Header, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.Path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrHeadersFile, f.Path, pathError(err))
	}
	if f.fi != nil && unchanged(st, f.fi) {
		return f.h, nil
	}
	h, fi, err := readHeadersFile(f.Path)
	if err != nil {
		f.fi, f.h = nil, nil // a broken file is never half used, nor the old one kept
		return nil, err
	}
	f.fi, f.h = fi, h
	return h, nil
}

// unchanged says whether a and b are the same version of one file: the
// same file, size and modification time, and the same mode and owner, so
// that a file opened up to others is refused from the next request on.
func unchanged(a, b os.FileInfo) bool {
	ua, _ := fileOwner(a)
	ub, _ := fileOwner(b)
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode() && ua == ub
}

// readHeadersFile opens, checks and parses the file at path; the checks
// are made on the file opened, not on the path.
func readHeadersFile(path string) (http.Header, os.FileInfo, error) {
	fail := func(format string, a ...any) (http.Header, os.FileInfo, error) {
		return nil, nil, fmt.Errorf("%w %s: "+format, append([]any{ErrHeadersFile, path}, a...)...)
	}
	file, err := os.Open(path)
	if err != nil {
		return fail("%v", pathError(err))
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return fail("%v", pathError(err))
	}
	if !fi.Mode().IsRegular() {
		return fail("not a regular file")
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fail("mode %04o lets group or others read or write it; it holds a credential: chmod 600 it", perm)
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Geteuid() {
		return fail("owned by uid %d, not by this process's user (uid %d); it holds a credential: chown it", uid, os.Geteuid())
	}
	if fi.Size() > MaxHeadersFileBytes {
		return fail("over %d bytes", MaxHeadersFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(file, MaxHeadersFileBytes+1))
	if err != nil {
		return fail("%v", pathError(err))
	}
	if len(data) > MaxHeadersFileBytes {
		return fail("over %d bytes", MaxHeadersFileBytes)
	}
	h, err := ParseHeaders(data)
	if err != nil {
		return fail("%v", err)
	}
	return h, fi, nil
}

// ParseHeaders reads the lines of a headers file (HeadersFile) or of a
// credential set (CredentialFeed), which its caller has bounded. Its
// errors name the line and the header, never a value.
func ParseHeaders(data []byte) (http.Header, error) {
	h := http.Header{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1) // the callers bound data: a file, a credential set
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("line %d is not `Name: value`", n)
		}
		if !httpguts.ValidHeaderFieldName(name) {
			// Not echoed: a line that is not a header may be a secret
			// that holds a ':'.
			return nil, fmt.Errorf("line %d: the text before ':' is not a header name (letters, digits and !#$%%&'*+-.^_`|~ only)", n)
		}
		name = http.CanonicalHeaderKey(name)
		if ReservedHeader(name) {
			return nil, fmt.Errorf("line %d: %s is set by the gateway itself and cannot be given here", n, name)
		}
		value = strings.TrimSpace(value)
		if value == "" || !httpguts.ValidHeaderFieldValue(value) {
			return nil, fmt.Errorf("line %d: the value of %s is empty or holds a character a header cannot", n, name)
		}
		h.Add(name, value)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return h, nil
}

// pathError is err without the path os puts in it (the message names the
// file once already).
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
