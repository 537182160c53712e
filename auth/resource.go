package auth

import (
	"strings"

	"github.com/lestrrat-go/jwx/v3/jwa"
)

// Resource is what sets one protected resource apart from another of the
// same gateway: its canonical URI (the audience its tokens carry), its
// name in the metadata, and the scopes and policies its tokens are held
// to. Several MCP servers behind one gateway are several resources of one
// issuer.
type Resource struct {
	// Resource is the canonical resource URI, as Options.Resource.
	Resource string
	// ResourceName is the metadata's resource_name, as
	// Options.ResourceName.
	ResourceName string
	// RequiredScopes, WriteScope, ExtraScopes, InitialScopes and Policies
	// are as in Options, for this resource alone.
	RequiredScopes []string
	WriteScope     string
	ExtraScopes    []string
	InitialScopes  []string
	Policies       []Rule
}

// ForResource returns an Authenticator for another resource of a's issuer:
// the same issuer, algorithms, keys and introspection client, and the same
// DPoP proof state (a proof replayed at another resource is still a
// replay), with r's audience, scopes and policies. Nothing is fetched
// twice: the keys a loads serve both, and its Ready, /readyz's signal,
// covers both. Each has its own cache of verified tokens, since a token
// that passes one resource's checks may fail the other's. Close it or not:
// only a's Close stops the shared work.
func (a *Authenticator) ForResource(r Resource) (*Authenticator, error) {
	o := a.opts
	o.Resource, o.ResourceName = r.Resource, r.ResourceName
	o.RequiredScopes, o.WriteScope, o.ExtraScopes = r.RequiredScopes, r.WriteScope, r.ExtraScopes
	o.InitialScopes, o.Policies = r.InitialScopes, r.Policies
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	d := &Authenticator{
		opts: o, algs: map[string]jwa.SignatureAlgorithm{}, cache: newTokenCache(o.TokenCacheSize),
		keys: a.keys, ilimit: a.ilimit, isem: a.isem, dpop: a.dpop, derived: true,
	}
	if o.Introspection != nil {
		d.icache = newTokenCache(o.TokenCacheSize)
		d.irefused = newTokenCache(o.TokenCacheSize)
	}
	for name, alg := range a.algs {
		d.algs[name] = alg
	}
	d.supported = supportedScopes(o)
	d.scopeParam = strings.Join(d.supported, " ")
	if len(o.InitialScopes) > 0 {
		d.scopeParam = strings.Join(o.InitialScopes, " ")
	}
	d.metadataURL = metadataURL(o.Resource)
	if d.metadata, err = d.buildMetadata(); err != nil {
		return nil, err
	}
	return d, nil
}
