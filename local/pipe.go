package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// A connection to the socket is one of two kinds, told apart by its first
// byte. A stdio connection (the shim's) opens with a hello line that
// starts with a NUL byte, which no HTTP client sends first (RFC 9112 §2.2:
// a request line, or a CRLF before it); the daemon answers it with one
// line, "ok" or "refused: WHY", and the connection then carries MCP's
// stdio framing both ways, one message per line, which the daemon relays
// to the gateway in-process. Any other first byte is an HTTP connection,
// served as before. A NUL followed by anything but a well-formed hello is
// closed unanswered: neither kind.
const (
	stdioHello  = "\x00mcpgate-stdio/1 "
	stdioOK     = "ok\n"
	stdioRefuse = "refused: "
	// maxHello bounds the hello line: its prefix and a target path.
	maxHello = 512
)

// ErrOldGateway is DialStdio's error when the daemon on the socket
// answers the hello as an HTTP server: an older mcpgate, which serves
// HTTP only.
var ErrOldGateway = errors.New("local: the gateway on the socket is an older mcpgate that takes HTTP only")

// DialStdio connects to the socket at path as Dial does, asks for a stdio
// connection to target (the gateway's path: /mcp or /mcp/NAME) and
// returns it once the daemon has accepted it; a refusal is an error with
// the daemon's words. What follows on the connection is MCP's stdio
// framing, both ways.
func DialStdio(ctx context.Context, path string, o Options, target string) (net.Conn, error) {
	if !validTarget(target) {
		return nil, fmt.Errorf("local: %q is not a gateway path", target)
	}
	c, err := Dial(ctx, path, o)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := io.WriteString(c, stdioHello+target+"\n"); err != nil {
		c.Close()
		return nil, fmt.Errorf("local: %s: %w", path, err)
	}
	// Byte by byte: what follows the answer is the gateway's, not ours to
	// buffer.
	var line []byte
	one := make([]byte, 1)
	for len(line) < maxHello {
		if _, err := c.Read(one); err != nil {
			c.Close()
			if len(line) == 0 && errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("local: %s: the gateway closed the connection without an answer", path)
			}
			return nil, fmt.Errorf("local: %s: %w", path, err)
		}
		if one[0] == '\n' {
			break
		}
		line = append(line, one[0])
	}
	_ = c.SetDeadline(time.Time{})
	answer := strings.TrimRight(string(line), "\r")
	switch {
	case answer+"\n" == stdioOK:
		return c, nil
	case strings.HasPrefix(answer, stdioRefuse):
		c.Close()
		return nil, errors.New(strings.TrimPrefix(answer, stdioRefuse))
	case strings.HasPrefix(answer, "HTTP/"):
		c.Close()
		return nil, fmt.Errorf("%w (%s)", ErrOldGateway, path)
	}
	c.Close()
	return nil, fmt.Errorf("local: %s: the gateway answered what no mcpgate says", path)
}

// validTarget: /mcp or /mcp/NAME, NAME plain (no path, query or escape,
// nor . or .., which a mux cleans to another path).
func validTarget(t string) bool {
	name, ok := strings.CutPrefix(t, "/mcp")
	if !ok {
		return false
	}
	if name == "" {
		return true
	}
	name, ok = strings.CutPrefix(name, "/")
	return ok && name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/?#%\\ \x00\r\n")
}

// StdioConn is a stdio connection accepted by SplitListener: the hello
// read, the rest of the client's bytes to read from In (what was read
// along with the hello, then the connection).
type StdioConn struct {
	net.Conn
	// In is the client's side of the stream, after the hello.
	In io.Reader
	// Target is the gateway path the client asked for (/mcp, /mcp/NAME).
	Target string
}

// Accept tells the client its connection is served; after it the
// connection carries MCP messages.
func (c *StdioConn) Accept() error {
	_, err := io.WriteString(c.Conn, stdioOK)
	return err
}

// Refuse tells the client why it is not served, on one line, and closes
// the connection.
func (c *StdioConn) Refuse(why string) {
	why = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, why)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c.Conn, stdioRefuse+why+"\n")
	c.Close()
}

// SplitListener reads the first byte of each connection ln accepts (within
// helloTimeout) on a goroutine of the connection's own: a stdio
// connection's hello is read and the connection handed to stdio, on that
// goroutine; any other is returned by the split listener's Accept, its
// first byte still to read, for an http.Server. Closing the split
// listener closes ln.
func SplitListener(ln net.Listener, helloTimeout time.Duration, stdio func(*StdioConn)) net.Listener {
	s := &splitListener{ln: ln, hello: helloTimeout, stdio: stdio, http: make(chan accepted), done: make(chan struct{})}
	go s.loop()
	return s
}

type accepted struct {
	c   net.Conn
	err error
}

type splitListener struct {
	ln    net.Listener
	hello time.Duration
	stdio func(*StdioConn)
	http  chan accepted
	done  chan struct{}
	once  sync.Once
}

// loop accepts until ln fails for good: a temporary error goes to Accept
// (net/http backs off before calling again), any other ends the loop.
func (s *splitListener) loop() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case s.http <- accepted{err: err}:
			case <-s.done:
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				continue
			}
			return
		}
		go s.sort(c)
	}
}

// sort reads c's first byte and sends it where it belongs.
func (s *splitListener) sort(c net.Conn) {
	if s.hello > 0 {
		_ = c.SetReadDeadline(time.Now().Add(s.hello))
	}
	r := bufio.NewReaderSize(c, maxHello)
	first, err := r.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	if first[0] != 0 {
		_ = c.SetReadDeadline(time.Time{}) // net/http sets its own
		select {
		case s.http <- accepted{c: &peekedConn{Conn: c, r: r}}:
		case <-s.done:
			c.Close()
		}
		return
	}
	line, err := r.ReadSlice('\n')
	target, ok := strings.CutPrefix(strings.TrimSuffix(string(line), "\n"), stdioHello)
	if err != nil || !ok || !validTarget(target) {
		c.Close() // neither HTTP nor a hello: nothing to answer
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	s.stdio(&StdioConn{Conn: c, In: io.MultiReader(buffered(r), c), Target: target})
}

// buffered is what r holds already, and nothing more.
func buffered(r *bufio.Reader) io.Reader {
	b, _ := r.Peek(r.Buffered())
	return strings.NewReader(string(b))
}

func (s *splitListener) Accept() (net.Conn, error) {
	select {
	case a := <-s.http:
		return a.c, a.err
	case <-s.done:
		return nil, net.ErrClosed
	}
}

func (s *splitListener) Close() error {
	s.once.Do(func() { close(s.done) })
	return s.ln.Close()
}

func (s *splitListener) Addr() net.Addr { return s.ln.Addr() }

// peekedConn is an HTTP connection whose first bytes were read ahead.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if c.r != nil {
		if c.r.Buffered() > 0 {
			return c.r.Read(p)
		}
		c.r = nil
	}
	return c.Conn.Read(p)
}

// NetConn is the connection underneath, for ConnContext.
func (c *peekedConn) NetConn() net.Conn { return c.Conn }
