package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
)

// Cookies are signed, not encrypted: HMAC-SHA256 under a key derived from
// the shared cookie key for each cookie name, so that a value signed for
// one cookie (the login's state) is never accepted as another (the
// session), and any replica holding the same key accepts it.

var errBadCookie = errors.New("web: the cookie is missing, altered or expired")

type signer struct{ key []byte }

func (s signer) mac(name, payload string) []byte {
	sub := hmac.New(sha256.New, s.key)
	sub.Write([]byte("mcpgate web cookie: " + name))
	m := hmac.New(sha256.New, sub.Sum(nil))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// encode signs v, with its expiry inside the signed part.
func (s signer) encode(name string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(name, payload)), nil
}

// decode checks the signature and unmarshals into v.
func (s signer) decode(name, value string, v any) error {
	payload, sig, ok := strings.Cut(value, ".")
	if !ok {
		return errBadCookie
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(name, payload)) {
		return errBadCookie
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, v) != nil {
		return errBadCookie
	}
	return nil
}

// setCookie sets a cookie the page's script cannot read, sent only over
// HTTPS (or to localhost), on the whole site, with sameSite.
func setCookie(w http.ResponseWriter, name, value string, ttl time.Duration, sameSite http.SameSite) {
	c := &http.Cookie{Name: name, Value: value, Path: "/", Secure: true, HttpOnly: true, SameSite: sameSite}
	if ttl > 0 {
		c.MaxAge = int(ttl.Seconds())
	} else {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}
