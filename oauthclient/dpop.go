package oauthclient

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DPoPKey is the client's DPoP key (RFC 9449): a P-256 key that signs
// ES256 proofs. Tokens bound to it (cnf.jkt, its thumbprint) are of no use
// without it.
type DPoPKey struct {
	priv       *ecdsa.PrivateKey
	header     []byte // the proofs' header, base64url: typ, alg, public jwk
	thumbprint string
}

// NewDPoPKey makes a fresh key.
func NewDPoPKey() (*DPoPKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return dpopKey(priv)
}

func dpopKey(priv *ecdsa.PrivateKey) (*DPoPKey, error) {
	if priv.Curve != elliptic.P256() {
		return nil, errors.New("oauthclient: the DPoP key is not a P-256 key")
	}
	pub, err := priv.PublicKey.ECDH()
	if err != nil {
		return nil, fmt.Errorf("oauthclient: the DPoP key: %w", err)
	}
	raw := pub.Bytes() // 0x04 || x || y, 32 bytes each
	enc := base64.RawURLEncoding.EncodeToString
	x, y := enc(raw[1:33]), enc(raw[33:65])
	// RFC 7638 §3.2: the required members, sorted, no whitespace.
	canon := `{"crv":"P-256","kty":"EC","x":"` + x + `","y":"` + y + `"}`
	sum := sha256.Sum256([]byte(canon))
	h, err := json.Marshal(map[string]any{
		"typ": "dpop+jwt", "alg": "ES256",
		"jwk": map[string]string{"kty": "EC", "crv": "P-256", "x": x, "y": y},
	})
	if err != nil {
		return nil, err
	}
	return &DPoPKey{priv: priv, header: []byte(enc(h)), thumbprint: enc(sum[:])}, nil
}

// Thumbprint is the key's RFC 7638 SHA-256 thumbprint, base64url: the
// cnf.jkt of the tokens bound to it.
func (k *DPoPKey) Thumbprint() string { return k.thumbprint }

// Proof is a DPoP proof (RFC 9449 §4.2) for a request of method to u: htu
// is u without query and fragment; ath is the hash of token when token is
// not empty (requests to a resource); nonce is sent when not empty.
func (k *DPoPKey) Proof(method string, u *url.URL, token, nonce string) (string, error) {
	htu := *u
	htu.RawQuery, htu.ForceQuery, htu.Fragment, htu.RawFragment, htu.User = "", false, "", "", nil
	jti := make([]byte, 16)
	rand.Read(jti)
	enc := base64.RawURLEncoding.EncodeToString
	c := map[string]any{"jti": enc(jti), "htm": method, "htu": htu.String(), "iat": time.Now().Unix()}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		c["ath"] = enc(sum[:])
	}
	if nonce != "" {
		c["nonce"] = nonce
	}
	cb, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	input := string(k.header) + "." + enc(cb)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, k.priv, digest[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64) // RFC 7518 §3.4: R || S, 32 bytes each
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + enc(sig), nil
}

// DPoPKeyPath is the key's file: dpop-key.pem beside the token cache.
func (c Cache) DPoPKeyPath() (string, error) {
	p, err := c.path()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(p), "dpop-key.pem"), nil
}

// DPoPKey loads the user's DPoP key from beside the cache, making it on
// first use: the file is written whole under a temporary name (mode 0600)
// and then linked into place, so a second process never reads half a key,
// and one that loses the race uses the winner's.
func (c Cache) DPoPKey() (*DPoPKey, error) {
	p, err := c.DPoPKeyPath()
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(p)
	if err := checkPrivateDir(dir); err != nil {
		return nil, err
	}
	if k, err := readDPoPKey(p); !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("oauthclient: %w", err)
	}
	k, err := NewDPoPKey()
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k.priv)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".dpop-key.*.tmp") // 0600
	if err != nil {
		return nil, fmt.Errorf("oauthclient: %w", err)
	}
	defer os.Remove(tmp.Name())
	werr := pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("oauthclient: writing %s: %w", p, werr)
	}
	if err := os.Link(tmp.Name(), p); errors.Is(err, fs.ErrExist) {
		return readDPoPKey(p) // another process made it first
	} else if err != nil {
		return nil, fmt.Errorf("oauthclient: writing %s: %w", p, err)
	}
	return k, nil
}

func readDPoPKey(p string) (*DPoPKey, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("oauthclient: %w", err)
	}
	if err := checkPrivateFile(p); err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("oauthclient: %s is not a PEM private key; delete it and log in again", p)
	}
	priv, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	ec, ok := priv.(*ecdsa.PrivateKey)
	if err != nil || !ok {
		return nil, fmt.Errorf("oauthclient: %s is not an EC private key; delete it and log in again", p)
	}
	k, err := dpopKey(ec)
	if err != nil {
		return nil, fmt.Errorf("%w (%s); delete it and log in again", err, p)
	}
	return k, nil
}

// DPoPTransport sends proofs of Key (RFC 9449): on POSTs to TokenURL (the
// token endpoint: code exchange and refresh) a proof without ath, retried
// once with the issuer's nonce when it answers use_dpop_nonce (§8); and on
// requests carrying "Authorization: Bearer T" when Bound(T) says T is
// DPoP-bound, the DPoP scheme and a proof with ath, retried once on a 401
// that asks for a nonce (§9). It remembers the latest DPoP-Nonce of each
// origin for the next proofs. Other requests pass unchanged. A request
// with a body is retried only when it has GetBody (http.NewRequest sets it).
type DPoPTransport struct {
	Base http.RoundTripper // default http.DefaultTransport
	// Key makes the proofs; when nil, LoadKey gives it at the first
	// request that needs one.
	Key      *DPoPKey
	LoadKey  func() (*DPoPKey, error)
	TokenURL string
	Bound    func(token string) bool

	mu     sync.Mutex
	nonces map[string]string // origin → latest DPoP-Nonce
}

func (t *DPoPTransport) key() (*DPoPKey, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Key == nil {
		if t.LoadKey == nil {
			return nil, errors.New("oauthclient: no DPoP key")
		}
		k, err := t.LoadKey()
		if err != nil {
			return nil, err
		}
		t.Key = k
	}
	return t.Key, nil
}

// DPoPClient is a copy of hc whose transport is a DPoPTransport over hc's.
func DPoPClient(hc *http.Client, key *DPoPKey, tokenURL string, bound func(string) bool) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := *hc
	c.Transport = &DPoPTransport{Base: hc.Transport, Key: key, TokenURL: tokenURL, Bound: bound}
	return &c
}

func origin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

func (t *DPoPTransport) nonce(u *url.URL) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nonces[origin(u)]
}

func (t *DPoPTransport) remember(u *url.URL, resp *http.Response) string {
	n := resp.Header.Get("DPoP-Nonce")
	if n == "" {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nonces == nil {
		t.nonces = map[string]string{}
	}
	t.nonces[origin(u)] = n
	return n
}

// maxNonceAnswer bounds the error body read to see a use_dpop_nonce.
const maxNonceAnswer = 1 << 16

// RoundTrip implements http.RoundTripper.
func (t *DPoPTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	token, resource := "", false
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "Bearer ") && t.Bound != nil && t.Bound(a[7:]) {
		token, resource = a[7:], true
	}
	toToken := r.Method == http.MethodPost && t.TokenURL != "" && sameEndpoint(r.URL, t.TokenURL)
	if !resource && !toToken {
		return base.RoundTrip(r)
	}
	key, err := t.key()
	if err != nil {
		return nil, err
	}
	send := func(r *http.Request) (*http.Response, error) {
		proof, err := key.Proof(r.Method, r.URL, token, t.nonce(r.URL))
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		if resource {
			r.Header.Set("Authorization", "DPoP "+token)
		}
		r.Header.Set("DPoP", proof)
		resp, err := base.RoundTrip(r)
		if err == nil {
			t.remember(r.URL, resp)
		}
		return resp, err
	}
	resp, err := send(r)
	if err != nil || resp.Header.Get("DPoP-Nonce") == "" {
		return resp, err
	}
	switch {
	case resource && resp.StatusCode == http.StatusUnauthorized:
		if !strings.Contains(strings.Join(resp.Header.Values("WWW-Authenticate"), ", "), "use_dpop_nonce") {
			return resp, nil
		}
	case !resource && resp.StatusCode == http.StatusBadRequest:
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxNonceAnswer))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		var e struct {
			Error string `json:"error"`
		}
		if rerr != nil || json.Unmarshal(body, &e) != nil || e.Error != "use_dpop_nonce" {
			return resp, nil
		}
	default:
		return resp, nil
	}
	retry := r
	if r.Body != nil && r.Body != http.NoBody {
		if r.GetBody == nil {
			return resp, nil
		}
		body, err := r.GetBody()
		if err != nil {
			return resp, nil
		}
		retry = r.Clone(r.Context())
		retry.Body = body
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxNonceAnswer))
	resp.Body.Close()
	return send(retry)
}

// sameEndpoint says whether u is the endpoint named by s, query aside.
func sameEndpoint(u *url.URL, s string) bool {
	e, err := url.Parse(s)
	return err == nil && strings.EqualFold(e.Scheme, u.Scheme) && strings.EqualFold(e.Host, u.Host) && e.Path == u.Path
}
