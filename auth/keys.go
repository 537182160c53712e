package auth

import (
	"context"
	"crypto"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/httprc/v3/errsink"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// Refresh bounds for the JWKS cache when the issuer sends no Cache-Control:
// rotation is also picked up at once through the unknown-kid refetch.
const (
	jwksMinInterval = 5 * time.Minute
	jwksMaxInterval = 24 * time.Hour
	fetchTimeout    = 10 * time.Second
	firstFetchWait  = 2 * time.Second // for the key cache's own first fetch
	firstRetry      = 250 * time.Millisecond
)

// keySource finds the issuer's JWKS by OIDC discovery and keeps it in a jwx
// cache. Until the first fetch succeeds, lookups fail with ErrUnavailable
// while a background loop retries with backoff.
type keySource struct {
	opts  *Options
	cache *jwk.Cache

	res     atomic.Pointer[httprc.ResourceBase[jwk.Set]] // set once keys are loaded
	index   atomic.Pointer[keyIndex]
	jwksURI string // written by the bootstrap loop only
	// introspectionURI is discovery's introspection_endpoint, written by
	// the bootstrap loop before res, and read only once res is set.
	introspectionURI string
	ready            chan struct{} // closed when the first key set is loaded

	nextAttempt atomic.Int64 // unix nanos of the next start-up attempt

	sem         chan struct{} // serializes refetches; holds lastRefetch
	lastRefetch time.Time

	stop context.CancelFunc
	done chan struct{}
}

// startKeys begins discovery and key loading in the background.
func startKeys(ctx context.Context, opts *Options) (*keySource, error) {
	k := &keySource{opts: opts, ready: make(chan struct{}), sem: make(chan struct{}, 1), done: make(chan struct{})}
	ctx, k.stop = context.WithCancel(ctx)
	sink := errsink.NewFunc(func(_ context.Context, err error) {
		opts.Logger.Warn("auth: background key refresh failed; cached keys stay in use", "err", err)
	})
	cache, err := jwk.NewCache(ctx, httprc.NewClient(httprc.WithWorkers(1), httprc.WithErrorSink(sink)))
	if err != nil {
		k.stop()
		return nil, fmt.Errorf("auth: key cache: %w", err)
	}
	k.cache = cache
	go k.run(ctx)
	return k, nil
}

// close stops the background work and waits for it.
func (k *keySource) close() error {
	k.stop()
	<-k.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return k.cache.Shutdown(ctx)
}

// run retries discovery and the first key fetch until both succeed.
func (k *keySource) run(ctx context.Context) {
	defer close(k.done)
	log := k.opts.Logger
	delay := firstRetry
	for attempt := 1; ; attempt++ {
		err := k.load(ctx)
		if err == nil {
			close(k.ready)
			log.Info("auth: signing keys loaded", "issuer", k.opts.Issuer, "jwks_uri", k.jwksURI, "attempt", attempt)
			return
		}
		if ctx.Err() != nil {
			return
		}
		k.nextAttempt.Store(time.Now().Add(delay).UnixNano())
		log.Warn("auth: cannot load the issuer's signing keys yet; answering 503 until then",
			"issuer", k.opts.Issuer, "attempt", attempt, "retry_in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, k.opts.RetryInterval)
	}
}

// load performs discovery (once) and a synchronous first JWKS fetch.
func (k *keySource) load(ctx context.Context) error {
	registered := false
	if k.jwksURI == "" {
		dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, k.opts.HTTPClient), fetchTimeout)
		defer cancel()
		p, err := oidc.NewProvider(dctx, k.opts.Issuer)
		if err != nil {
			return fmt.Errorf("auth: discovery: %w", err)
		}
		var meta struct {
			JWKSURI               string `json:"jwks_uri"`
			IntrospectionEndpoint string `json:"introspection_endpoint"`
		}
		if err := p.Claims(&meta); err != nil {
			return fmt.Errorf("auth: discovery document: %w", err)
		}
		if err := checkURL(meta.JWKSURI, true); err != nil {
			return fmt.Errorf("auth: discovery document's jwks_uri: %w", err)
		}
		if k.opts.Introspection != nil {
			if meta.IntrospectionEndpoint == "" {
				return fmt.Errorf("auth: discovery document names no introspection_endpoint, which auth introspection needs (RFC 7662, RFC 8414)")
			}
			if err := checkURL(meta.IntrospectionEndpoint, true); err != nil {
				return fmt.Errorf("auth: discovery document's introspection_endpoint: %w", err)
			}
			k.introspectionURI = meta.IntrospectionEndpoint
		}
		if err := k.cache.Register(ctx, meta.JWKSURI,
			jwk.WithHTTPClient(k.opts.HTTPClient), jwk.WithWaitReady(false),
			jwk.WithMinInterval(jwksMinInterval), jwk.WithMaxInterval(jwksMaxInterval)); err != nil {
			return fmt.Errorf("auth: key cache: %w", err)
		}
		k.jwksURI = meta.JWKSURI
		registered = true
	}
	res, err := k.cache.LookupResource(ctx, k.jwksURI)
	if err != nil {
		return fmt.Errorf("auth: key cache: %w", err)
	}
	// Registering starts the cache's own first fetch: wait a little for it
	// rather than fetch a second time (two start-up fetches also let the
	// second one land after a key rotation). A later attempt, or a first
	// fetch that is slow or failed (Ready cannot tell), fetches here.
	var set jwk.Set
	if registered {
		wctx, cancel := context.WithTimeout(ctx, firstFetchWait)
		if res.Ready(wctx) == nil {
			set = res.Resource()
		}
		cancel()
	}
	if set == nil {
		fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
		defer cancel()
		if set, err = k.cache.Refresh(fctx, k.jwksURI); err != nil {
			return fmt.Errorf("auth: fetching %s: %w", k.jwksURI, err)
		}
	}
	if set.Len() == 0 {
		return fmt.Errorf("auth: %s holds no keys", k.jwksURI)
	}
	k.res.Store(res)
	return nil
}

// retryAfterSeconds is the Retry-After for a 503: the time to the next
// start-up attempt, at least one second.
func (k *keySource) retryAfterSeconds() int {
	d := time.Until(time.Unix(0, k.nextAttempt.Load()))
	return max(1, min(int(math.Ceil(d.Seconds())), int(k.opts.RetryInterval/time.Second)))
}

// introspectionEndpoint is discovery's introspection_endpoint, or
// ErrUnavailable before discovery succeeded.
func (k *keySource) introspectionEndpoint() (string, error) {
	if k.res.Load() == nil {
		return "", fmt.Errorf("%w (%w)", ErrUnavailable, errNoIntrospectionEndpoint)
	}
	return k.introspectionURI, nil
}

// verificationKey is one public key in usable form.
type verificationKey struct {
	kid string
	alg string // the JWK's alg, when it names one
	kty string
	raw any
}

// keyIndex is a parsed view of one JWKS, rebuilt when the cache's set changes.
type keyIndex struct {
	set   jwk.Set
	byKid map[string][]verificationKey
	all   []verificationKey
	// gen names the keys: a rebuilt index with the same keys (a refetch
	// that found no change) keeps its predecessor's, so the verified-token
	// cache, which is emptied when gen changes, survives it.
	gen *keyGeneration
}

// keyGeneration is compared by address only; it is not empty, so that
// two of them never share one.
type keyGeneration struct{ _ byte }

// sameKeys reports whether idx and o hold the same keys, in the same
// order, with the same kid, type and alg.
func (idx *keyIndex) sameKeys(o *keyIndex) bool {
	if len(idx.all) != len(o.all) {
		return false
	}
	for i, a := range idx.all {
		b := o.all[i]
		pub, ok := a.raw.(interface{ Equal(crypto.PublicKey) bool })
		if a.kid != b.kid || a.kty != b.kty || a.alg != b.alg || !ok || !pub.Equal(b.raw) {
			return false
		}
	}
	return true
}

func newKeyIndex(set jwk.Set, log func(msg string, args ...any)) *keyIndex {
	idx := &keyIndex{set: set, byKid: map[string][]verificationKey{}}
	for i := range set.Len() {
		key, _ := set.Key(i)
		kid, _ := key.KeyID()
		if use, ok := key.KeyUsage(); ok && use != "sig" {
			continue
		}
		pub, err := jwk.PublicKeyOf(key)
		var raw any
		if err == nil {
			err = jwk.Export(pub, &raw)
		}
		if err != nil {
			log("auth: skipping an unusable JWKS key", "kid", kid, "err", err)
			continue
		}
		vk := verificationKey{kid: kid, kty: key.KeyType().String(), raw: raw}
		if a, ok := key.Algorithm(); ok {
			vk.alg = a.String()
		}
		idx.byKid[kid] = append(idx.byKid[kid], vk)
		idx.all = append(idx.all, vk)
	}
	return idx
}

// candidates are the keys that may have signed a token with this kid and
// alg: the key's type must fit the algorithm, and its own alg, if any, must
// equal it. A token without kid is tried against every fitting key.
func (idx *keyIndex) candidates(kid string, alg jwa.SignatureAlgorithm) []verificationKey {
	pool := idx.all
	if kid != "" {
		pool = idx.byKid[kid]
	}
	var out []verificationKey
	for _, k := range pool {
		if k.kty == keyTypeFor(alg) && (k.alg == "" || k.alg == alg.String()) {
			out = append(out, k)
		}
	}
	return out
}

func keyTypeFor(alg jwa.SignatureAlgorithm) string {
	switch s := alg.String(); s[:2] {
	case "RS", "PS":
		return "RSA"
	case "ES":
		return "EC"
	case "Ed":
		return "OKP"
	default:
		return ""
	}
}

// current is the index of the cached key set, or nil before the first load.
func (k *keySource) current() *keyIndex {
	res := k.res.Load()
	if res == nil {
		return nil
	}
	set := res.Resource()
	if idx := k.index.Load(); idx != nil && idx.set == set {
		return idx
	}
	idx := newKeyIndex(set, k.opts.Logger.Warn)
	if old := k.index.Load(); old != nil && old.sameKeys(idx) {
		idx.gen = old.gen
	} else {
		idx.gen = new(keyGeneration)
	}
	k.index.Store(idx)
	return idx
}

// keys returns the candidate keys for kid and alg, and the index they
// are from. An unknown kid triggers
// one refetch of the JWKS, at most once per MinRefetchInterval across all
// requests (RFC 7517 leaves rotation to the issuer; this is how a new key
// is found between scheduled refreshes). A failed refetch keeps the cached
// keys.
func (k *keySource) keys(ctx context.Context, kid string, alg jwa.SignatureAlgorithm) (*keyIndex, []verificationKey, error) {
	idx := k.current()
	if idx == nil {
		return nil, nil, ErrUnavailable
	}
	if c := idx.candidates(kid, alg); len(c) > 0 {
		return idx, c, nil
	}
	k.refetch(ctx)
	idx = k.current()
	if c := idx.candidates(kid, alg); len(c) > 0 {
		return idx, c, nil
	}
	return nil, nil, ErrUnknownKey
}

func (k *keySource) refetch(ctx context.Context) {
	select {
	case k.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-k.sem }()
	now := k.opts.Now()
	if bound := k.opts.MinRefetchInterval; bound > 0 && !k.lastRefetch.IsZero() && now.Sub(k.lastRefetch) < bound {
		return
	}
	k.lastRefetch = now
	fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	if _, err := k.cache.Refresh(fctx, k.jwksURI); err != nil {
		k.opts.Logger.Warn("auth: refetching keys for an unknown kid failed; cached keys stay in use", "err", err)
		return
	}
	k.opts.Logger.Info("auth: refetched signing keys for an unknown kid", "jwks_uri", k.jwksURI)
}
