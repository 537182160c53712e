package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// The JOSE header and the claims are read by their exact member names.
// encoding/json, decoding into a struct, matches names case-insensitively
// and with Unicode folding ("ſcope" and "SCOPE" fill Scope, a Kelvin sign
// fills a field named with k), and the last of two equal names wins: a
// claim a user can influence (a profile attribute the issuer copies into
// the token) could then stand in for scope or the user claim. So an
// object is first checked for repeated member names at every depth, then
// decoded into a map (whose keys encoding/json never folds), and each
// claim taken from the map by its exact name.

// errDuplicateMember: an object names a member twice. RFC 7519 §4 lets a
// parser reject such a token, and RFC 7515 §4 a header; two readers could
// disagree about which one counts. The header is checked at its top
// level, the only one read (headerMembers).
var errDuplicateMember = errors.New("auth: a JSON object names a member twice")

// members decodes data, a JSON object, into its members by exact name,
// refusing one that repeats a member name in any object it holds.
func members(data []byte) (map[string]json.RawMessage, error) {
	if err := uniqueMembers(data); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	return all, nil
}

// uniqueMembers reports errDuplicateMember when an object anywhere in data
// names a member twice, comparing names after JSON unescaping (as a
// decoder does: "sc\u006fpe" is scope), and a syntax error as the decoder
// finds it.
func uniqueMembers(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // any number is fine here; its reader checks its range
	// One entry per open container: the names seen in an object, nil for
	// an array.
	var open []map[string]bool
	inObject := func() bool { return len(open) > 0 && open[len(open)-1] != nil }
	wantName := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				open, wantName = append(open, map[string]bool{}), true
				continue
			case '[':
				open, wantName = append(open, nil), false
				continue
			}
			open = open[:len(open)-1] // the container ends: a value of its parent
		case string:
			if wantName {
				names := open[len(open)-1]
				if names[v] {
					return errDuplicateMember
				}
				names[v], wantName = true, false
				continue
			}
		}
		wantName = inObject()
	}
}

// maxHeaderMembers bounds the members of a JOSE header: a real one has a
// handful (RFC 7515 §4.1 registers eleven).
const maxHeaderMembers = 32

// errHeaderMembers: a JOSE header with more than maxHeaderMembers members.
var errHeaderMembers = errors.New("auth: a JOSE header with too many members")

// headerMembers decodes data, a JOSE header, into its top-level members by
// exact name, refusing one that repeats a name or has more than
// maxHeaderMembers. Anyone can send a header (it is read before the
// signature is checked), and only its top-level members are read, so its
// values are passed over as encoding/json's scanner passes them, at the
// cost of json.Valid, rather than walked member by member as members walks
// the claims: a made-up header of thousands of members or small objects
// costs no more than an ordinary one.
func headerMembers(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("auth: a JOSE header that is not a JSON object")
	}
	all := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string) // a name: Token checks an object's syntax
		if _, dup := all[name]; dup {
			return nil, errDuplicateMember
		}
		if len(all) == maxHeaderMembers {
			return nil, errHeaderMembers
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		all[name] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("auth: data after a JOSE header")
	}
	return all, nil
}

// decodeHeader reads a JOSE header by exact member names.
func decodeHeader(data []byte) (header, error) {
	var h header
	all, err := headerMembers(data)
	if err != nil {
		return h, err
	}
	err = fill(all, map[string]any{"alg": &h.Alg, "kid": &h.Kid, "typ": &h.Typ})
	h.Crit, h.B64 = all["crit"], all["b64"] // present at all, null included
	return h, err
}

// decodeClaims reads the claims of a JWT payload, or of an introspection
// answer, by exact member names, and returns every member for the claims
// read later (a configured user claim, a policy's claim path).
func decodeClaims(data []byte) (claims, map[string]json.RawMessage, error) {
	var c claims
	all, err := members(data)
	if err != nil {
		return c, nil, err
	}
	err = fill(all, c.fields())
	return c, all, err
}

// fields maps each claim's exact name to where it is read into.
func (c *claims) fields() map[string]any {
	return map[string]any{
		"iss": &c.Iss, "sub": &c.Sub, "aud": &c.Aud, "exp": &c.Exp, "nbf": &c.Nbf, "iat": &c.Iat,
		"azp": &c.Azp, "client_id": &c.ClientID, "scope": &c.Scope, "scp": &c.Scp, "cnf": &c.Cnf,
		"preferred_username": &c.PreferredUsername, "email": &c.Email,
	}
}

// fill decodes each member of all that fields names into its target; an
// absent member leaves its target as it is, a member of the wrong JSON type
// is an error.
func fill(all map[string]json.RawMessage, fields map[string]any) error {
	for name, dst := range fields {
		raw, ok := all[name]
		if !ok {
			continue
		}
		var err error
		if u, isU := dst.(json.Unmarshaler); isU {
			err = u.UnmarshalJSON(raw) // null included, as a struct field reads it
		} else {
			err = json.Unmarshal(raw, dst)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
