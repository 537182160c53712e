// Package authtest is a real OpenID Connect issuer for tests: discovery and
// a JWKS over HTTPS, keys made per issuer, and tokens signed with jwx in the
// shapes Keycloak and Ory Hydra issue. It can rotate its keys and go down
// and come back, to test what a resource server does then. Its RFC 7662
// introspection endpoint answers for opaque and Keycloak "lightweight"
// tokens minted with Opaque and Lightweight. Its token
// endpoint grants client credentials to anyone (golang.org/x/oauth2 clients
// can use it), and exchanges tokens by RFC 8693 as Keycloak's standard
// token exchange does (exchange.go); its authorization endpoint approves every request at once
// (authorize.go), for interactive clients.
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/mcpgate/mcpgate/certs"
)

// Config says where an Issuer listens and with which certificate.
type Config struct {
	// Addr is the listen address; default "127.0.0.1:0" (a free port).
	Addr string
	// CertPEM and KeyPEM are the server certificate; default a fresh
	// self-signed one for 127.0.0.1, localhost and ::1.
	CertPEM, KeyPEM []byte
	// Host names the issuer in its URL; default the listener's IP.
	Host string
}

// Issuer is a running test issuer.
type Issuer struct {
	// URL is the issuer identifier, https://HOST:PORT, no trailing slash.
	URL string
	// Now is the clock for iat, nbf and exp of minted tokens; default
	// time.Now. Set it before minting.
	Now func() time.Time
	// Audience is the aud of tokens from the token endpoint when the
	// request names no RFC 8707 resource. Set it before use.
	Audience string
	// LoginUser is the user the authorization endpoint approves;
	// default "alice".
	LoginUser string
	// AccessTokenTTL is the lifetime of tokens from the authorization
	// code and refresh grants; default five minutes.
	AccessTokenTTL time.Duration
	// DPoP makes the metadata list dpop_signing_alg_values_supported
	// (the token endpoint binds tokens to a valid proof either way).
	DPoP bool
	// DPoPNonce, when set, is the nonce token requests' proofs must
	// carry (RFC 9449 §8).
	DPoPNonce string

	addr    string
	tlsConf *tls.Config
	certPEM []byte
	client  *http.Client

	mu      sync.Mutex
	srv     *http.Server
	served  chan struct{}
	rsaKey  *rsa.PrivateKey
	rsaKid  string
	ecKey   *ecdsa.PrivateKey
	ecKid   string
	jwks    []byte
	rotated int

	fetches   atomic.Int64
	discovers atomic.Int64
	grants    grants

	tokenProofs atomic.Int64

	intro introspection
	exch  exchange
}

// New starts an issuer for a test on a free loopback port and stops it when
// the test ends.
func New(t testing.TB) *Issuer {
	t.Helper()
	i, err := Start(Config{})
	if err != nil {
		t.Fatalf("authtest: %v", err)
	}
	t.Cleanup(i.Close)
	return i
}

// Start makes keys and a certificate and starts serving.
func Start(cfg Config) (*Issuer, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.CertPEM == nil {
		var err error
		// Named 127.0.0.1 first, so that its subject is not a gateway's
		// self-signed one (localhost first): a client that trusts both
		// (Node's NODE_EXTRA_CA_CERTS, OpenSSL) finds a trust anchor by
		// its subject, and two of one subject hide one of them.
		if cfg.CertPEM, cfg.KeyPEM, err = certs.SelfSigned([]string{"127.0.0.1", "localhost", "::1"}, time.Now()); err != nil {
			return nil, err
		}
	}
	cert, err := tls.X509KeyPair(cfg.CertPEM, cfg.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("authtest: certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CertPEM) {
		return nil, errors.New("authtest: certificate PEM holds no certificate")
	}
	i := &Issuer{
		Now:     time.Now,
		tlsConf: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		certPEM: cfg.CertPEM,
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		}},
		addr: cfg.Addr,
	}
	if err := i.newKeys(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("authtest: %w", err)
	}
	i.addr = ln.Addr().String()
	host, port, _ := net.SplitHostPort(i.addr)
	if cfg.Host != "" {
		host = cfg.Host
	}
	i.URL = "https://" + net.JoinHostPort(host, port)
	i.serve(ln)
	return i, nil
}

func (i *Issuer) serve(ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", i.discovery)
	mux.HandleFunc("GET /jwks", i.keys)
	mux.HandleFunc("POST /token", i.token)
	mux.HandleFunc("GET /authorize", i.authorize)
	mux.HandleFunc("POST /register", i.register)
	mux.HandleFunc("POST /introspect", i.introspect)
	i.srv = &http.Server{Handler: mux, TLSConfig: i.tlsConf, ReadHeaderTimeout: 10 * time.Second}
	i.served = make(chan struct{})
	srv, done := i.srv, i.served
	go func() {
		defer close(done)
		srv.ServeTLS(ln, "", "")
	}()
}

// Stop takes the issuer down: the port refuses connections until Start.
func (i *Issuer) Stop() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.srv == nil {
		return
	}
	i.srv.Close()
	<-i.served
	i.srv = nil
	i.client.CloseIdleConnections()
}

// Start brings a stopped issuer back on the same address.
func (i *Issuer) Start() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", i.addr)
	if err != nil {
		return fmt.Errorf("authtest: restarting on %s: %w", i.addr, err)
	}
	i.serve(ln)
	return nil
}

// Close stops the issuer for good.
func (i *Issuer) Close() { i.Stop() }

// Client is an HTTP client that trusts the issuer's certificate.
func (i *Issuer) Client() *http.Client { return i.client }

// CertPEM is the issuer's certificate, its own CA.
func (i *Issuer) CertPEM() []byte { return i.certPEM }

// JWKSURL is where the keys are published.
func (i *Issuer) JWKSURL() string { return i.URL + "/jwks" }

// JWKSFetches counts JWKS requests served, to test refetch bounds.
func (i *Issuer) JWKSFetches() int { return int(i.fetches.Load()) }

func (i *Issuer) discovery(w http.ResponseWriter, _ *http.Request) {
	i.discovers.Add(1)
	w.Header().Set("Content-Type", "application/json")
	doc := map[string]any{
		"issuer":                                i.URL,
		"jwks_uri":                              i.JWKSURL(),
		"authorization_endpoint":                i.URL + "/authorize",
		"token_endpoint":                        i.URL + "/token",
		"registration_endpoint":                 i.URL + "/register",
		"introspection_endpoint":                i.IntrospectionURL(),
		"grant_types_supported":                 []string{"client_credentials", "authorization_code", "refresh_token", grantTokenExchange},
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		"code_challenge_methods_supported":      []string{"S256"},

		"authorization_response_iss_parameter_supported": true,
	}
	if i.DPoP {
		doc["dpop_signing_alg_values_supported"] = dpopAlgs
	}
	json.NewEncoder(w).Encode(doc)
}

// token is a client-credentials token endpoint (RFC 6749 §4.4) that trusts
// every client: it mints a Keycloak-shaped token for the form's scope, with
// aud from the resource parameter (RFC 8707) or Audience, and the user
// "service-account-CLIENT" (Keycloak's naming) unless the form's username
// extension names one. Only for tests and benchmarks.
func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": code})
	}
	if err := r.ParseForm(); err != nil {
		fail("invalid_request")
		return
	}
	jkt, ok := i.tokenProof(w, r)
	if !ok {
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "client_credentials":
	case "authorization_code", "refresh_token":
		i.userGrant(w, r, jkt)
		return
	case grantTokenExchange:
		i.tokenExchange(w, r)
		return
	default:
		fail("unsupported_grant_type")
		return
	}
	client, _, ok := r.BasicAuth()
	if !ok {
		client = r.PostForm.Get("client_id")
	}
	aud := r.PostForm.Get("resource")
	if aud == "" {
		aud = i.Audience
	}
	if client == "" || aud == "" {
		fail("invalid_request")
		return
	}
	user := r.PostForm.Get("username")
	if user == "" {
		user = "service-account-" + client
	}
	scopes := strings.Fields(r.PostForm.Get("scope"))
	c := i.KeycloakClaims(user, aud, scopes...)
	c["azp"] = client
	typ := "Bearer"
	if jkt != "" {
		c["cnf"], typ = map[string]any{"jkt": jkt}, "DPoP"
	}
	tok, err := i.Sign(c, SignOptions{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]any{
		"access_token": tok, "token_type": typ, "expires_in": 300, "scope": strings.Join(scopes, " "),
	})
}

func (i *Issuer) keys(w http.ResponseWriter, _ *http.Request) {
	i.fetches.Add(1)
	i.mu.Lock()
	body := i.jwks
	i.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// newKeys makes a fresh RSA and EC key pair with new kids and publishes
// only them. The caller holds mu or is the constructor.
func (i *Issuer) newKeys() error {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("authtest: %w", err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("authtest: %w", err)
	}
	i.rotated++
	i.rsaKey, i.rsaKid = rk, fmt.Sprintf("rsa-%d", i.rotated)
	i.ecKey, i.ecKid = ek, fmt.Sprintf("ec-%d", i.rotated)
	set := jwk.NewSet()
	for _, k := range []struct {
		pub      any
		kid, alg string
	}{{&rk.PublicKey, i.rsaKid, "RS256"}, {&ek.PublicKey, i.ecKid, "ES256"}} {
		key, err := jwk.Import(k.pub)
		if err != nil {
			return fmt.Errorf("authtest: %w", err)
		}
		key.Set(jwk.KeyIDKey, k.kid)
		key.Set(jwk.KeyUsageKey, "sig")
		key.Set(jwk.AlgorithmKey, k.alg) // as Keycloak publishes them
		set.AddKey(key)
	}
	i.jwks, err = json.Marshal(set)
	return err
}

// Rotate replaces both keys with new ones (new kids); the old keys are no
// longer published, so tokens they signed stop verifying once a resource
// server refetches.
func (i *Issuer) Rotate() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.newKeys()
}

// KeyIDs are the kids of the current RSA and EC keys.
func (i *Issuer) KeyIDs() (rsaKid, ecKid string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.rsaKid, i.ecKid
}

// RSAPublicKeyPEM is the current RSA public key as PEM, the bytes an
// attacker would use as an HMAC secret in an algorithm-confusion attack.
func (i *Issuer) RSAPublicKeyPEM() []byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	der, _ := x509.MarshalPKIXPublicKey(&i.rsaKey.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}
