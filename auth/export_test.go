package auth

// CachedTokens is how many verified tokens a holds in its cache, for the
// cache's bound tests.
func CachedTokens(a *Authenticator) int { return a.cache.len() }

// The option checks Options.Validate applies, for their own tests.
var (
	CheckResource      = checkResource
	CheckScope         = checkScope
	CheckHMACSecret    = checkHMACSecret
	CheckAlgorithm     = checkAlgorithm
	ErrNeedsHMACSecret = errNeedsHMACSecret
)
