package auth

import (
	"net"
	"sync"
	"time"
)

// AddressKey is the key of a per-address limit for ip: the IPv4 address,
// or for IPv6 its /64, which one host commonly holds whole.
func AddressKey(ip net.IP) string {
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String()
}

// remoteKey is AddressKey of an http.Request's RemoteAddr ("host:port"),
// or the address as given when it does not parse.
func remoteKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	if ip := net.ParseIP(host); ip != nil {
		return AddressKey(ip)
	}
	return host
}

// maxRateSources bounds the addresses a rateLimit remembers; beyond it,
// those whose allowance is whole again are forgotten, and if that is not
// enough, all.
const maxRateSources = 16384

// rateLimit is a token bucket per source address: perMinute requests a
// minute, in bursts of as many.
type rateLimit struct {
	perMinute float64

	mu      sync.Mutex
	sources map[string]*allowance
}

type allowance struct {
	left float64
	at   time.Time
}

func newRateLimit(perMinute int) *rateLimit {
	if perMinute <= 0 {
		return nil
	}
	return &rateLimit{perMinute: float64(perMinute), sources: map[string]*allowance{}}
}

// allow takes one request of source's allowance at now, and reports false
// when none is left.
func (l *rateLimit) allow(source string, now time.Time) bool {
	if l == nil || source == "" {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.sources[source]
	if a == nil {
		if len(l.sources) >= maxRateSources {
			l.forget(now)
		}
		a = &allowance{left: l.perMinute, at: now}
		l.sources[source] = a
	}
	a.left = min(l.perMinute, a.left+now.Sub(a.at).Minutes()*l.perMinute)
	a.at = now
	if a.left < 1 {
		return false
	}
	a.left--
	return true
}

// forget drops the sources whose allowance is whole again, or every one
// when that frees nothing.
func (l *rateLimit) forget(now time.Time) {
	for k, a := range l.sources {
		if a.left+now.Sub(a.at).Minutes()*l.perMinute >= l.perMinute {
			delete(l.sources, k)
		}
	}
	if len(l.sources) >= maxRateSources {
		clear(l.sources)
	}
}
