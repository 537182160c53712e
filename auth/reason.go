package auth

import "errors"

// reasons names every check and kind for Reason; the checks come first, so
// the most precise name wins.
var reasons = []struct {
	err  error
	name string
}{
	{ErrTokenInQuery, "tokenInQuery"},
	{ErrFormBody, "formBody"},
	{ErrManyAuthorization, "manyAuthorization"},
	{ErrTokenTooLarge, "tokenTooLarge"},
	{ErrMalformed, "malformed"},
	{ErrAlgorithm, "algorithm"},
	{ErrType, "type"},
	{ErrUnknownKey, "unknownKey"},
	{ErrSignature, "signature"},
	{ErrClaims, "claims"},
	{ErrIssuer, "issuer"},
	{ErrAudience, "audience"},
	{ErrNoExpiry, "noExpiry"},
	{ErrExpired, "expired"},
	{ErrNotYetValid, "notYetValid"},
	{ErrIssuedInFuture, "issuedInFuture"},
	{ErrNoSubject, "noSubject"},
	{ErrUserID, "userId"},
	{ErrDPoPBound, "dpopBound"},
	{ErrCertBound, "certBound"},
	{ErrKeyBound, "keyBound"},
	{ErrBadConfirmation, "badConfirmation"},
	{ErrProofMissing, "dpopProofMissing"},
	{ErrManyProofs, "dpopManyProofs"},
	{ErrProofMalformed, "dpopProofMalformed"},
	{ErrProofTooLarge, "dpopProofTooLarge"},
	{ErrProofType, "dpopProofType"},
	{ErrProofAlgorithm, "dpopProofAlgorithm"},
	{ErrProofHeader, "dpopProofHeader"},
	{ErrProofKey, "dpopProofKey"},
	{ErrProofSignature, "dpopProofSignature"},
	{ErrProofClaims, "dpopProofClaims"},
	{ErrProofMethod, "dpopProofMethod"},
	{ErrProofURI, "dpopProofURI"},
	{ErrProofStale, "dpopProofStale"},
	{ErrProofFuture, "dpopProofFuture"},
	{ErrProofTokenHash, "dpopProofTokenHash"},
	{ErrProofReplayed, "dpopProofReplayed"},
	{ErrProofNonce, "dpopNonce"},
	{ErrProofWithBearer, "dpopProofWithBearer"},
	{ErrNotDPoPBound, "dpopNotBound"},
	{ErrDPoPKeyMismatch, "dpopKeyMismatch"},
	{ErrDPoPAsBearer, "dpopAsBearer"},
	{ErrDPoPRequired, "dpopRequired"},
	{ErrReplayCacheFull, "dpopReplayCacheFull"},
	{ErrCertMissing, "certMissing"},
	{ErrCertMismatch, "certMismatch"},
	{ErrBadCertConf, "badCertConfirmation"},
	{ErrMissingScope, "missingScope"},
	{ErrIntrospectionLimited, "introspectionLimited"},
	{ErrNoToken, "noToken"},
	{ErrInvalidRequest, "invalidRequest"},
	{ErrInvalidToken, "invalidToken"},
	{ErrInsufficientScope, "insufficientScope"},
	{ErrUnavailable, "unavailable"},
	{ErrTooManyRequests, "tooManyRequests"},
	{ErrInvalidDPoPProof, "invalidDPoPProof"},
	{ErrUseDPoPNonce, "useDPoPNonce"},
}

// Reasons returns every name Reason gives, "other" last: the label values
// of a metric of refusals, known before the first one.
func Reasons() []string {
	out := make([]string, 0, len(reasons)+1)
	for _, r := range reasons {
		out = append(out, r.name)
	}
	return append(out, "other")
}

// Reason names the check that refused a request, from a fixed set (the
// checks above, then their kinds; "other" for anything else): a label for
// metrics that carries no token contents.
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "other"
}
