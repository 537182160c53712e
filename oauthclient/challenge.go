package oauthclient

import "strings"

// Challenge is one challenge of a WWW-Authenticate field (RFC 9110
// §11.6.1): an auth-scheme, then either auth-params or a token68.
type Challenge struct {
	// Scheme is the auth-scheme in lower case ("bearer", "dpop", "basic"):
	// schemes are case-insensitive.
	Scheme string
	// Params are the auth-params, by lower-case name (names are
	// case-insensitive), values unquoted. A challenge that names a
	// parameter twice is malformed (RFC 9110 §11.2) and not returned.
	Params map[string]string
	// Token68 is the challenge's token68 instead of auth-params, if any.
	Token68 string
}

// ParseChallenges reads every challenge of a WWW-Authenticate field; give
// it the field's lines joined with ", " (what several field lines mean,
// RFC 9110 §5.3). It is lenient where a client must be: a malformed
// challenge ends the reading, and the well-formed challenges before it are
// returned, so that a server's odd Negotiate or Basic challenge cannot hide
// its Bearer one that came first. A comma inside a quoted value is the
// value's; a comma followed by a token and "=" starts the next parameter,
// any other comma the next challenge.
//
// The go-sdk's oauthex.ParseWWWAuthenticate (v1.8.0) reads the same
// grammar but is not used: it refuses the whole field over an empty quoted
// value (error_description=""), and it takes an escaped backslash before a
// closing quote for an escaped quote, so that `Basic realm="a\\", Bearer
// scope="s"` reads as one Basic challenge with a param "bearer scope".
func ParseChallenges(field string) []Challenge {
	p := challengeParser{s: field}
	var out []Challenge
	for {
		p.skip(" \t,")
		if p.done() {
			return out
		}
		c, ok := p.challenge()
		if !ok {
			return out
		}
		out = append(out, c)
	}
}

// BearerChallenge returns the params of the field's first Bearer
// challenge, and whether it has one.
func BearerChallenge(field string) (map[string]string, bool) {
	for _, c := range ParseChallenges(field) {
		if c.Scheme == "bearer" {
			return c.Params, true
		}
	}
	return nil, false
}

// AuthChallenge returns the params of the field's first Bearer challenge,
// else of its first DPoP challenge (RFC 9449 §7.1: a server that takes
// only DPoP-bound tokens sends no Bearer one), with the scheme found.
func AuthChallenge(field string) (scheme string, params map[string]string, ok bool) {
	cs := ParseChallenges(field)
	for _, want := range []string{"bearer", "dpop"} {
		for _, c := range cs {
			if c.Scheme == want {
				return want, c.Params, true
			}
		}
	}
	return "", nil, false
}

// ChallengeParam reads one auth-param of the field's first Bearer
// challenge (RFC 6750 §3), else of its first DPoP challenge: "" when there
// is no such challenge or param.
func ChallengeParam(field, name string) string {
	_, params, _ := AuthChallenge(field)
	return params[strings.ToLower(name)]
}

// challengeParser reads a WWW-Authenticate field from s[i:].
type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) done() bool { return p.i >= len(p.s) }

func (p *challengeParser) skip(set string) {
	for p.i < len(p.s) && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

// token reads an RFC 9110 token (tchar+), or "".
func (p *challengeParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// challenge reads one challenge at p.i.
func (p *challengeParser) challenge() (Challenge, bool) {
	scheme := p.token()
	if scheme == "" {
		return Challenge{}, false
	}
	c := Challenge{Scheme: strings.ToLower(scheme), Params: map[string]string{}}
	if p.done() || p.s[p.i] == ',' {
		return c, true
	}
	if p.s[p.i] != ' ' {
		return Challenge{}, false
	}
	p.skip(" ")
	if t, ok := p.token68(); ok {
		c.Token68 = t
		return c, true
	}
	for {
		name := p.token()
		p.skip(" \t")
		if name == "" || p.done() || p.s[p.i] != '=' {
			return Challenge{}, false
		}
		p.i++
		p.skip(" \t")
		val, ok := p.value()
		if !ok {
			return Challenge{}, false
		}
		name = strings.ToLower(name)
		if _, dup := c.Params[name]; dup {
			return Challenge{}, false
		}
		c.Params[name] = val
		// Another param of this challenge, or the end of it.
		p.skip(" \t")
		if p.done() {
			return c, true
		}
		if p.s[p.i] != ',' {
			return Challenge{}, false
		}
		if !p.paramFollows() {
			return c, true
		}
		p.skip(" \t,")
	}
}

// paramFollows reports whether the comma at p.i is followed by an
// auth-param (token BWS "="), not by the next challenge's scheme.
func (p *challengeParser) paramFollows() bool {
	q := challengeParser{s: p.s, i: p.i}
	q.skip(" \t,")
	if q.token() == "" {
		return false
	}
	q.skip(" \t")
	return !q.done() && q.s[q.i] == '='
}

// token68 reads a token68 that is the whole rest of the challenge, if
// there is one, and leaves p.i where it was if not.
func (p *challengeParser) token68() (string, bool) {
	start, i := p.i, p.i
	for i < len(p.s) && (isAlnum(p.s[i]) || strings.IndexByte("-._~+/", p.s[i]) >= 0) {
		i++
	}
	if i == start {
		return "", false
	}
	for i < len(p.s) && p.s[i] == '=' {
		i++
	}
	j := i
	for j < len(p.s) && (p.s[j] == ' ' || p.s[j] == '\t') {
		j++
	}
	if j < len(p.s) && p.s[j] != ',' {
		return "", false // a name=value param
	}
	if i > start && p.s[i-1] == '=' && j < len(p.s) && (&challengeParser{s: p.s, i: j}).paramFollows() {
		// "realm=, x=y" is not a token68 followed by a challenge; read it
		// as a param with an empty token, which is malformed.
		return "", false
	}
	p.i = i
	return p.s[start:i], true
}

// value reads a token or a quoted-string (RFC 9110 §5.6.4), unquoted.
func (p *challengeParser) value() (string, bool) {
	if p.done() {
		return "", false
	}
	if p.s[p.i] != '"' {
		t := p.token()
		return t, t != ""
	}
	var b strings.Builder
	for p.i++; p.i < len(p.s); p.i++ {
		switch ch := p.s[p.i]; {
		case ch == '"':
			p.i++
			return b.String(), true
		case ch == '\\' && p.i+1 < len(p.s):
			p.i++
			b.WriteByte(p.s[p.i])
		default:
			b.WriteByte(ch)
		}
	}
	return "", false // unterminated
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isTchar reports whether c may appear in an RFC 9110 token.
func isTchar(c byte) bool {
	return isAlnum(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
