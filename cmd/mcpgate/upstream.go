package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/bridge"
	"github.com/mcpgate/mcpgate/certs"
	"github.com/mcpgate/mcpgate/workerproto"
)

func init() { commands["upstream"] = runUpstream }

// Defaults of mcpgate upstream's limits.
const (
	upstreamConnectTimeout  = 10 * time.Second
	upstreamResponseTimeout = 5 * time.Minute
	upstreamIdleTimeout     = 5 * time.Minute
	upstreamMaxMessage      = 16 << 20
	upstreamMaxHeaderBytes  = 64 << 10
)

// upstreamName is what --name may be: it is shown to clients in errors.
var upstreamName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// runUpstream is `mcpgate upstream`: the worker of a remote server, an MCP
// server on stdin/stdout that relays every message to the server's
// Streamable HTTP endpoint (package bridge), one connection or session per
// process: the gateway starts one per user and server.
func runUpstream(ctx context.Context, m *Main, args []string) error {
	fs := pflag.NewFlagSet("upstream", pflag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(m.Stderr, `Usage: mcpgate upstream --name NAME --url URL [--headers-file FILE] [--credential-fd N] [--ca-file FILE]

The worker of a remote MCP server: the gateway starts it per user and server,
and it relays the gateway's messages on stdin/stdout to the server's
Streamable HTTP endpoint at URL, on whichever protocol revision the gateway
chose. Each request carries the headers of FILE (lines "Name: value", mode
0600, read again when it changes) and the user's own header credentials the
gateway hands it on the socket N (replacing a line of FILE of the same name,
renewed in place), never the client's own token. Errors name the server NAME. It ends when stdin ends, ending the server's session.
Logs go to stderr only.

`)
		fs.PrintDefaults()
	}
	var (
		name, rawURL, headersFile, caFile string
		o                                 = upstreamLimits{}
		credFD                            int
	)
	fs.StringVar(&name, "name", "", "the server's name in the gateway's configuration, shown in errors (required)")
	fs.StringVar(&rawURL, "url", "", "the remote server's MCP endpoint, https:// (http:// on loopback only) (required)")
	fs.StringVar(&headersFile, "headers-file", "", "a file of headers sent with every request (Name: value a line, mode 0600)")
	fs.IntVar(&credFD, "credential-fd", -1, "an inherited socket the gateway sends the user's header credentials on (its own use)")
	fs.StringVar(&caFile, "ca-file", "", "PEM file of CA certificates to trust besides the system's")
	fs.DurationVar(&o.connect, "connect-timeout", upstreamConnectTimeout, "connecting to the server, TLS handshake included")
	fs.DurationVar(&o.response, "response-timeout", upstreamResponseTimeout, "from a request sent to the head of its answer (not a listen stream)")
	fs.DurationVar(&o.idle, "idle-timeout", upstreamIdleTimeout, "an answer begun that sends nothing this long fails (not a listen stream)")
	fs.IntVar(&o.maxMessage, "max-message-bytes", upstreamMaxMessage, "one message, either way")
	switch err := fs.Parse(args); {
	case errors.Is(err, pflag.ErrHelp):
		return nil
	case err != nil:
		fmt.Fprintln(m.Stderr, err)
		return errUsage
	}
	if fs.NArg() > 0 || name == "" || rawURL == "" {
		fmt.Fprintln(m.Stderr, "mcpgate upstream: needs --name and --url and no arguments (see --help)")
		return errUsage
	}
	if !upstreamName.MatchString(name) {
		fmt.Fprintln(m.Stderr, "mcpgate upstream: --name must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
		return errUsage
	}
	// The headers go to --url: never in the clear over the network.
	if err := auth.CheckURL(rawURL); err != nil {
		fmt.Fprintf(m.Stderr, "mcpgate upstream: --url %v\n", err)
		return errUsage
	}
	if o.connect <= 0 || o.response <= 0 || o.idle < 0 || o.maxMessage < 1<<10 {
		fmt.Fprintln(m.Stderr, "mcpgate upstream: the timeouts must be positive (--idle-timeout 0: none), and --max-message-bytes at least 1024")
		return errUsage
	}
	hc, err := upstreamClient(caFile, o)
	if err != nil {
		return fmt.Errorf("mcpgate upstream %q: %w", name, err)
	}
	bo := bridge.Options{URL: rawURL, HTTPClient: hc, Server: name, ResponseTimeout: o.response, IdleTimeout: o.idle, MaxMessageBytes: o.maxMessage,
		Log: slog.New(slog.NewTextHandler(m.Stderr, nil)).With("server", name)}
	if headersFile != "" {
		hf := &bridge.HeadersFile{Path: headersFile}
		// A broken file stops the worker at once, with the reason in the
		// gateway's log; one broken later fails each request until mended.
		if _, err := hf.Header(); err != nil {
			return fmt.Errorf("mcpgate upstream %q: %w", name, err)
		}
		bo.Header = hf.Header
	}
	if credFD >= 0 {
		feed, err := bridge.NewCredentialFeed(credFD)
		if err == nil {
			_, err = feed.Header() // the gateway sent the first set before the start
		}
		if err != nil {
			return fmt.Errorf("mcpgate upstream %q: %w", name, err)
		}
		bo.Header = withCredentialHeaders(bo.Header, feed.Header)
	}
	in := bufio.NewReaderSize(m.Stdin, 64<<10)
	if m.Getenv(workerproto.EnvPrestarted) == "true" {
		// Pre-started: the identity line comes first, and is the gateway's
		// alone; the relay has no use for it beyond the log.
		if err := workerproto.CheckPooledEnv(m.Getenv); err != nil {
			return err
		}
		id, err := workerproto.ReadIdentityLine(in)
		if errors.Is(err, io.EOF) {
			return nil // stopped unclaimed
		}
		if err != nil {
			return err
		}
		bo.Log = bo.Log.With("user", id.User)
	}
	u, _ := url.Parse(rawURL)
	bo.Log.Info("mcpgate upstream: relaying to the remote server", "host", u.Host)
	return bridge.Run(ctx, in, m.Stdout, bo)
}

// upstreamLimits are the flags that bound the relay.
type upstreamLimits struct {
	connect, response, idle time.Duration
	maxMessage              int
}

// upstreamClient reaches the remote server: its certificate verified
// against the system's roots and caFile, connecting bounded (the relay
// bounds the answers: bridge.Options.ResponseTimeout, IdleTimeout), and no
// redirect followed (a redirect to another host would carry the headers
// there; the request fails naming where it points instead).
func upstreamClient(caFile string, o upstreamLimits) (*http.Client, error) {
	hc, err := certs.ClientTrusting(caFile)
	if err != nil {
		return nil, err
	}
	tr := hc.Transport.(*http.Transport)
	tr.DialContext = (&net.Dialer{Timeout: o.connect, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = o.connect
	tr.IdleConnTimeout = 90 * time.Second
	tr.MaxResponseHeaderBytes = upstreamMaxHeaderBytes
	hc.Timeout = 0 // an SSE answer lasts as long as its tool runs; IdleTimeout bounds its silences
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return hc, nil
}

// withCredentialHeaders is the static headers (nil: none) with the user's
// credential headers in place of any line of the same name.
func withCredentialHeaders(static, creds func() (http.Header, error)) func() (http.Header, error) {
	return func() (http.Header, error) {
		c, err := creds()
		if err != nil || static == nil {
			return c, err
		}
		s, err := static()
		if err != nil {
			return nil, err
		}
		h := s.Clone()
		for n, v := range c {
			h[n] = v
		}
		return h, nil
	}
}
