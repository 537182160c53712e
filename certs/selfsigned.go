// Package certs loads, reloads and generates TLS material for the gateway.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// DefaultHosts are the names a development certificate is valid for.
var DefaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// File names WriteSelfSigned uses inside its directory.
const (
	CertFileName = "cert.pem"
	KeyFileName  = "key.pem"
)

// Validity of a development certificate.
const selfSignedValidity = 365 * 24 * time.Hour

// SelfSigned makes an ECDSA P-256 certificate for hosts (DNS names or IP
// addresses; DefaultHosts when empty), valid from an hour before now for a
// year, and returns it and its PKCS #8 key as PEM. The certificate is its
// own CA, so clients can trust exactly it (curl --cacert cert.pem).
func SelfSigned(hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	if len(hosts) == 0 {
		hosts = DefaultHosts
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("certs: serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"mcpgate development"}, CommonName: hosts[0]},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: creating certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: encoding key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
}

// WriteSelfSigned writes a SelfSigned certificate into dir as cert.pem
// (mode 0644) and key.pem (mode 0600), creating dir (0700) if needed and
// replacing files that are there. Each file is replaced atomically, so a
// running Reloader never reads half a file.
func WriteSelfSigned(dir string, hosts []string, now time.Time) (certPath, keyPath string, err error) {
	certPath, keyPath = filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName)
	certPEM, keyPEM, err := SelfSigned(hosts, now)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("certs: %w", err)
	}
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeAtomic(certPath, certPEM, 0o644); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// writeAtomic writes data to a temporary file beside path and renames it
// into place.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("certs: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("certs: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("certs: writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}
