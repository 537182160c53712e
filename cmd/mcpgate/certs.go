package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/certs"
)

func init() { commands["certs"] = runCerts }

// runCerts is `mcpgate certs`: a self-signed development certificate, so
// that TLS can be tried before a CA-issued one is at hand. Real deployments
// use a CA's certificate; the gateway reloads either when the files change.
func runCerts(_ context.Context, m *Main, args []string) error {
	fs := pflag.NewFlagSet("certs", pflag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(m.Stderr, `Usage: mcpgate certs [--dir certs] [--host NAME]... [--force]

Writes a self-signed ECDSA P-256 certificate (DIR/%s, mode 0644) and its key
(DIR/%s, mode 0600), valid for a year. Clients trust it with, e.g.,
curl --cacert DIR/%s or NODE_EXTRA_CA_CERTS=DIR/%s.

`, certs.CertFileName, certs.KeyFileName, certs.CertFileName, certs.CertFileName)
		fs.PrintDefaults()
	}
	dir := fs.String("dir", "certs", "directory to write into (keep it out of version control)")
	hosts := fs.StringSlice("host", certs.DefaultHosts, "DNS name or IP address the certificate is for; repeat or comma-separate")
	force := fs.Bool("force", false, "replace an existing certificate and key")
	switch err := fs.Parse(args); {
	case errors.Is(err, pflag.ErrHelp):
		return nil
	case err != nil:
		fmt.Fprintln(m.Stderr, err)
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(m.Stderr, "mcpgate: certs takes no arguments, got %q\n", fs.Args())
		return errUsage
	}
	if !*force {
		for _, n := range []string{certs.CertFileName, certs.KeyFileName} {
			if _, err := os.Stat(filepath.Join(*dir, n)); err == nil {
				return fmt.Errorf("mcpgate: %s already exists; pass --force to replace it", filepath.Join(*dir, n))
			}
		}
	}
	certPath, keyPath, err := certs.WriteSelfSigned(*dir, *hosts, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "wrote %s and %s for %v\n", certPath, keyPath, *hosts)
	return nil
}
