package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/oauthclient"
)

// ServerOptions configure CheckServer.
type ServerOptions struct {
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Roots are the CAs a client trusts, for the chain check; default the
	// system pool.
	Roots *x509.CertPool
	// Worker starts the configured worker for a session (read-only or
	// not) and returns its answer to initialize, or why there is none;
	// nil skips the worker checks. The command wires the gateway's own
	// launcher here, so the check starts exactly what serve would.
	Worker func(ctx context.Context, readOnly bool) (serverName string, err error)
}

// CheckServer checks a gateway's configuration on the machine it runs on:
// the configuration is valid; the listen address is free; the TLS
// certificate is readable, chains to a trusted root, names the public
// URL's host and is not about to expire; the issuer's discovery and JWKS
// are reachable over the configured CA, with keys the algorithm
// allow-list accepts; the clock agrees with the issuer's; and which
// audience tokens must carry.
func CheckServer(ctx context.Context, cfg *config.Config, o ServerOptions) *Report {
	r := &Report{}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := cfg.Validate(); err != nil {
		r.fail("config", strings.ReplaceAll(err.Error(), "\n", "; "), "fix the keys named (docs/configuration.md)")
		return r
	}
	r.ok("config", "valid")

	// A socket-only listen (local mode) has no port to check.
	if addr := cfg.TCPListen(); addr != "" {
		if ln, err := net.Listen("tcp", addr); errors.Is(err, syscall.EADDRINUSE) {
			// doctor --config is run next to the gateway it checks, which
			// holds its own port: that is no failure of the configuration.
			r.warn("listen", addr+" is in use (by the running gateway, if it is up)",
				"expected while the gateway runs; otherwise another program holds the port: stop it, or change server.listen")
		} else if err != nil {
			r.fail("listen", fmt.Sprintf("%s: %v", addr, err), "the address is not this machine's, or not one you may bind; change server.listen")
		} else {
			ln.Close()
			r.ok("listen", addr+" is free")
		}
	}

	if cfg.TLSEnabled() {
		checkCertificate(r, cfg, o)
	} else if cfg.TCPListen() != "" && !cfg.Loopback() {
		r.fail("tls", "no TLS on a non-loopback address", "set tls.cert_file and tls.key_file")
	}

	checkAccounts(r, cfg)
	checkSandbox(r, cfg)
	checkCredentials(ctx, r, cfg)
	if o.Worker != nil {
		for _, ro := range []bool{false, true} {
			check := "worker"
			if ro {
				check = "worker (read-only)"
			}
			name, err := o.Worker(ctx, ro)
			if err != nil {
				r.fail(check, err.Error(), "run the worker by hand to see its error (mcpgate worker for the built-in one; the database settings reach it as MCPGATE_WORKER_DB_* variables)")
			} else {
				r.ok(check, "started and answered initialize ("+name+"), its database open")
			}
		}
	}

	if !cfg.Authenticated() {
		r.warn("auth", "no auth.issuer: the unauthenticated localhost mode", "set auth.issuer before exposing the gateway")
		return r
	}
	r.ok("audience", "tokens must carry aud "+cfg.Resource()+" (server.public_url + /mcp)")
	checkIssuer(ctx, r, cfg, o)
	return r
}

func checkCertificate(r *Report, cfg *config.Config, o ServerOptions) {
	pair, err := tls.LoadX509KeyPair(cfg.TLS.CertFile, cfg.TLS.KeyFile)
	if err != nil {
		r.fail("tls certificate", err.Error(), "tls.cert_file and tls.key_file must be a readable PEM certificate and its key")
		return
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			r.fail("tls certificate", err.Error(), "")
			return
		}
	}
	days := int(leaf.NotAfter.Sub(o.Now()).Hours() / 24)
	switch {
	case days < 0:
		r.fail("tls expiry", "expired on "+leaf.NotAfter.UTC().Format(time.DateOnly), "renew it; the gateway reloads the files when they change")
	case days < 21:
		r.warn("tls expiry", fmt.Sprintf("expires in %d days", days), "renew it soon")
	default:
		r.ok("tls expiry", fmt.Sprintf("expires in %d days", days))
	}
	if cfg.Server.PublicURL != "" {
		u, _ := url.Parse(cfg.Server.PublicURL)
		if err := leaf.VerifyHostname(u.Hostname()); err != nil {
			r.fail("tls names", fmt.Sprintf("the certificate names %v, not %s", append(leaf.DNSNames, ipStrings(leaf.IPAddresses)...), u.Hostname()),
				"issue it for server.public_url's host (mcpgate certs --host NAME)")
		} else {
			r.ok("tls names", "the certificate names "+u.Hostname())
		}
	}
	inter := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	roots := o.Roots
	if roots == nil {
		roots, _ = x509.SystemCertPool()
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: o.Now()}); err != nil {
		fix := "put the intermediate certificates after the leaf in tls.cert_file"
		if leaf.Issuer.String() == leaf.Subject.String() {
			fix = "a self-signed certificate: every client must trust it (mcpgate login/bridge --ca-file, NODE_EXTRA_CA_CERTS); use a CA's certificate in production"
		}
		r.warn("tls chain", err.Error(), fix)
	} else {
		r.ok("tls chain", "complete, to a trusted root")
	}
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

func checkIssuer(ctx context.Context, r *Report, cfg *config.Config, o ServerOptions) {
	hc, err := issuerHTTPClient(cfg)
	if err != nil {
		r.fail("issuer ca", err.Error(), "auth.issuer_ca_file must be readable")
		return
	}
	as, err := oauthclient.DiscoverServer(ctx, hc, cfg.Auth.Issuer)
	if err != nil {
		r.fail("issuer discovery", err.Error(), "auth.issuer must be the issuer exactly as its discovery document names it, reachable from here (auth.issuer_ca_file for a private CA)")
		return
	}
	r.ok("issuer discovery", as.Issuer)
	if as.JWKSURI == "" {
		r.fail("jwks", "the discovery document has no jwks_uri", "the issuer must publish its signing keys")
		return
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, as.JWKSURI, nil)
	resp, err := hc.Do(req)
	if err != nil {
		r.fail("jwks", err.Error(), "the gateway must reach the JWKS URL")
		return
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct {
			Kty, Alg, Use string
		} `json:"keys"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set) != nil {
		r.fail("jwks", fmt.Sprintf("GET %s: %s, or not a JWK set", as.JWKSURI, resp.Status), "the issuer must publish its keys")
		return
	}
	r.ok("jwks", fmt.Sprintf("%d keys at %s", len(set.Keys), as.JWKSURI))
	var usable []string
	for _, k := range set.Keys {
		if k.Use == "enc" {
			continue
		}
		for _, alg := range cfg.Auth.Algorithms {
			if (k.Alg != "" && k.Alg == alg) || (k.Alg == "" && keyFamily(k.Kty, alg)) {
				usable = append(usable, alg)
			}
		}
	}
	if len(usable) == 0 {
		r.fail("algorithms", fmt.Sprintf("no signing key of the issuer uses an algorithm of auth.algorithms %v", cfg.Auth.Algorithms),
			"add the issuer's algorithm (its keys' alg) to auth.algorithms")
	} else {
		slices.Sort(usable)
		r.ok("algorithms", fmt.Sprintf("%v accepted", slices.Compact(usable)))
	}
	if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		skew := o.Now().Sub(d)
		if skew < 0 {
			skew = -skew
		}
		leeway := cfg.Auth.Leeway
		switch {
		case skew > leeway+2*time.Second && skew > 5*time.Second:
			r.fail("clock", fmt.Sprintf("%s apart from the issuer's, auth.leeway is %s", skew.Round(time.Second), leeway),
				"synchronize the clock (NTP); fresh tokens look not-yet-valid or expired otherwise")
		default:
			r.ok("clock", fmt.Sprintf("%s from the issuer's (auth.leeway %s)", skew.Round(time.Second), leeway))
		}
	}
}

// issuerHTTPClient reaches auth.issuer, trusting auth.issuer_ca_file
// beside the system's roots.
func issuerHTTPClient(cfg *config.Config) (*http.Client, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	if cfg.Auth.IssuerCAFile != "" {
		pem, err := os.ReadFile(cfg.Auth.IssuerCAFile)
		if err != nil {
			return nil, err
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		pool.AppendCertsFromPEM(pem)
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	return hc, nil
}

func keyFamily(kty, alg string) bool {
	switch kty {
	case "RSA":
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case "EC":
		return strings.HasPrefix(alg, "ES")
	case "OKP":
		return alg == "EdDSA"
	}
	return false
}
