package bridge

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const secret = "s3cr3t-value"

func writeHeaders(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), mode))
	require.NoError(t, os.Chmod(path, mode)) // whatever the umask
}

// A headers file holds a credential: one that others may read or write,
// that another user owns, or that is not a regular file is refused with a
// message that says what to do; a line that cannot be a header, or that
// sets a header of the protocol, is refused naming the line and the
// header; no error ever holds a value.
func TestHeadersFileRefuses(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		content string
		mode    os.FileMode
		prepare func(path string)
		want    string
	}{
		"readable by others":  {content: "X-Api-Key: " + secret, mode: 0o644, want: "mode 0644 lets group or others read or write it; it holds a credential: chmod 600 it"},
		"readable by group":   {content: "X-Api-Key: " + secret, mode: 0o640, want: "mode 0640"},
		"writable by others":  {content: "X-Api-Key: " + secret, mode: 0o602, want: "mode 0602"},
		"not Name: value":     {content: "# key\n\n" + secret, mode: 0o600, want: "line 3 is not `Name: value`"},
		"a bad name":          {content: "X Api: " + secret, mode: 0o600, want: `line 1: the text before ':' is not a header name`},
		"a secret with a ':'": {content: "Bearer " + secret + ":x", mode: 0o600, want: `line 1: the text before ':' is not a header name`},
		"a protocol header":   {content: "Mcp-Session-Id: " + secret, mode: 0o600, want: "line 1: Mcp-Session-Id is set by the gateway itself"},
		"a mirrored param":    {content: "mcp-param-region: " + secret, mode: 0o600, want: "Mcp-Param-Region is set by the gateway itself"},
		"the content type":    {content: "content-type: " + secret, mode: 0o600, want: "Content-Type is set by the gateway itself"},
		"a value with a CTL":  {content: "X-Api-Key: " + secret + "\x01", mode: 0o600, want: "line 1: the value of X-Api-Key is empty or holds a character a header cannot"},
		"an empty value":      {content: "X-Api-Key:   ", mode: 0o600, want: "the value of X-Api-Key is empty"},
		"missing":             {mode: 0o600, prepare: func(p string) { os.Remove(p) }, want: "no such file or directory"},
		"a directory":         {mode: 0o600, prepare: func(p string) { os.Remove(p); os.Mkdir(p, 0o700) }, want: "not a regular file"},
		"too large":           {content: "X-Pad: " + string(make([]byte, MaxHeadersFileBytes)), mode: 0o600, want: "over 65536 bytes"},
		"another user's file": {content: "X-Api-Key: " + secret, mode: 0o600, prepare: chownToNobody(t), want: "owned by uid 65534, not by this process's user"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, filepath.Base(t.Name()))
			writeHeaders(t, path, c.content, c.mode)
			if c.prepare != nil {
				c.prepare(path)
			}
			_, err := (&HeadersFile{Path: path}).Header()
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrHeadersFile))
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), path, "the error names the file")
			assert.NotContains(t, err.Error(), secret)
		})
	}
}

// chownToNobody gives the file to another user; only root can.
func chownToNobody(t *testing.T) func(string) {
	return func(path string) {
		if os.Geteuid() != 0 {
			t.Skip("giving a file to another user needs root")
		}
		require.NoError(t, os.Chown(path, 65534, 65534))
	}
}

// The file is read again when it changes, whether replaced by a rename or
// rewritten in place, and a file broken later fails until mended rather
// than leaving the old credential in use.
func TestHeadersFileRereads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h")
	writeHeaders(t, path, "# comment\nAuthorization: Bearer one\nX-Multi: a\nx-multi: b\n", 0o600)
	f := &HeadersFile{Path: path}
	h, err := f.Header()
	require.NoError(t, err)
	assert.Equal(t, "Bearer one", h.Get("Authorization"))
	assert.Equal(t, []string{"a", "b"}, h.Values("X-Multi"))

	tmp := path + ".new"
	writeHeaders(t, tmp, "Authorization: Bearer two\n", 0o600)
	require.NoError(t, os.Rename(tmp, path))
	h, err = f.Header()
	require.NoError(t, err)
	assert.Equal(t, "Bearer two", h.Get("Authorization"), "replaced by a rename")

	writeHeaders(t, path, "Authorization: Bearer three\n", 0o600)
	later := time.Now().Add(time.Second) // a clock tick apart, as two writes are
	require.NoError(t, os.Chtimes(path, later, later))
	h, err = f.Header()
	require.NoError(t, err)
	assert.Equal(t, "Bearer three", h.Get("Authorization"), "rewritten in place")

	require.NoError(t, os.Chmod(path, 0o644))
	_, err = f.Header()
	assert.ErrorContains(t, err, "mode 0644", "a file opened up is refused, not served from memory")
	require.NoError(t, os.Chmod(path, 0o600))
	h, err = f.Header()
	require.NoError(t, err)
	assert.Equal(t, "Bearer three", h.Get("Authorization"))
}
