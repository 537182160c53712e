package auth

// CachedTokens is how many verified tokens a holds in its cache, for the
// cache's bound tests.
func CachedTokens(a *Authenticator) int { return a.cache.len() }
