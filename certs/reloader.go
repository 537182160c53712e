package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultPollInterval is how often Watch looks at the files.
const DefaultPollInterval = 5 * time.Second

// Reloader serves a certificate and key pair from files and swaps in a new
// pair when the files change or on SIGHUP. Only new handshakes see the new
// certificate; open connections keep theirs and are never dropped. A
// reload that fails (a half-renewed pair, a key that does not match)
// keeps the old certificate and is logged.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger

	// PollInterval is how often Watch checks the files; set it before
	// calling Watch. Default DefaultPollInterval.
	PollInterval time.Duration

	cert atomic.Pointer[tls.Certificate]

	mu    sync.Mutex // serializes reloads; guards stamp
	stamp [2]fileStamp

	reloaded func(error) // test hook, called after every reload attempt
	watching func()      // test hook, called once Watch listens for SIGHUP
}

// fileStamp is what a poll compares: a renewal changes one or both.
type fileStamp struct {
	mod  time.Time
	size int64
}

// NewReloader loads the pair once; an unreadable or mismatched pair is an
// error, so the gateway does not start without a certificate.
func NewReloader(certFile, keyFile string, logger *slog.Logger) (*Reloader, error) {
	if logger == nil {
		logger = slog.Default()
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, log: logger, PollInterval: DefaultPollInterval}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// GetCertificate is for tls.Config.GetCertificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cert.Load(), nil
}

// NotAfter returns when the served certificate (the chain's leaf) expires,
// for the metrics; zero when it cannot be read.
func (r *Reloader) NotAfter() time.Time {
	c := r.cert.Load()
	if c == nil {
		return time.Time{}
	}
	leaf := c.Leaf
	if leaf == nil && len(c.Certificate) > 0 {
		leaf, _ = x509.ParseCertificate(c.Certificate[0])
	}
	if leaf == nil {
		return time.Time{}
	}
	return leaf.NotAfter
}

// Reload reads the pair now. On failure the current certificate stays.
func (r *Reloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloadLocked()
}

func (r *Reloader) reloadLocked() error {
	stamp, _ := r.stat()
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		err = fmt.Errorf("certs: loading %s and %s: %w", r.certFile, r.keyFile, err)
	} else {
		r.cert.Store(&cert)
		r.stamp = stamp
	}
	if r.reloaded != nil {
		r.reloaded(err)
	}
	return err
}

// reloadIfChanged reloads when either file's modification time or size
// differs from the last successful load.
func (r *Reloader) reloadIfChanged() (changed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stamp, err := r.stat()
	if err != nil || stamp == r.stamp {
		return false, nil // a file missing mid-renewal: wait for the next poll
	}
	return true, r.reloadLocked()
}

func (r *Reloader) stat() ([2]fileStamp, error) {
	var s [2]fileStamp
	for i, name := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return s, err
		}
		s[i] = fileStamp{fi.ModTime(), fi.Size()}
	}
	return s, nil
}

// Watch reloads when the files change (polled every PollInterval) and on
// SIGHUP, until ctx is done; it then returns nil. Run it in a goroutine the
// caller owns.
func (r *Reloader) Watch(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if r.watching != nil {
		r.watching()
	}
	interval := r.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			r.logResult(r.Reload(), "SIGHUP")
		case <-tick.C:
			if changed, err := r.reloadIfChanged(); changed {
				r.logResult(err, "file change")
			}
		}
	}
}

func (r *Reloader) logResult(err error, why string) {
	if err != nil {
		r.log.Error("certs: reload failed; keeping the current certificate", "trigger", why, "err", err)
		return
	}
	r.log.Info("certs: certificate reloaded", "trigger", why, "cert", r.certFile)
}

// ServerTLSConfig is the gateway's TLS configuration: certificates from r,
// TLS 1.2 at least (RFC 9325 §3.1.1: TLS 1.0 and 1.1 are deprecated), Go's
// default cipher suites, which are all AEAD with forward secrecy for TLS 1.2.
func ServerTLSConfig(r *Reloader) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.GetCertificate,
	}
}
