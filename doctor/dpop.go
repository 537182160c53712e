package doctor

import (
	"net/http"

	"github.com/mcpgate/mcpgate/oauthclient"
)

// dpopFor returns the client that sends a token bound to a DPoP key
// (cnf.jkt, RFC 9449 §6.1) as the bridge does, as Authorization: DPoP with
// a proof of o.DPoPKey, and reports the binding as "token dpop". An
// unbound token goes on hc unchanged. ok is false when the token is bound
// to a key the doctor cannot prove: sending it would only earn a 401 whose
// reason the findings would not explain.
func dpopFor(r *Report, hc *http.Client, o URLOptions, claims map[string]any) (_ *http.Client, ok bool) {
	cnf, _ := claims["cnf"].(map[string]any)
	jkt, _ := cnf["jkt"].(string)
	if jkt == "" {
		return hc, true
	}
	if o.DPoPKey == nil {
		r.fail("token dpop", "bound to a DPoP key (cnf.jkt "+clipThumb(jkt)+"), and no key to prove it with", "check a DPoP-bound token with the key that made its proofs (mcpgate login keeps it beside the token cache)")
		return hc, false
	}
	key, err := o.DPoPKey()
	if err != nil {
		r.fail("token dpop", "bound to a DPoP key (cnf.jkt "+clipThumb(jkt)+"); mcpgate login's key cannot be read: "+err.Error(), "log in with mcpgate login (it makes the key), or check the token on the machine that holds its key")
		return hc, false
	}
	if key.Thumbprint() != jkt {
		r.fail("token dpop", "bound to the DPoP key "+clipThumb(jkt)+", not the key of mcpgate login ("+clipThumb(key.Thumbprint())+")", "the token was issued to another client's key; only that client can use it: check it there, or log in with mcpgate login and check its token")
		return hc, false
	}
	r.ok("token dpop", "bound to mcpgate login's key ("+clipThumb(jkt)+"): sent as DPoP with a proof")
	return oauthclient.DPoPClient(hc, key, "", func(t string) bool { return t == o.Token }), true
}

// clipThumb shortens a thumbprint for a report line.
func clipThumb(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}
