//go:build !linux

package bridge

import (
	"errors"
	"net/http"
)

// ErrCredentialFeed is wrapped by every error of CredentialFeed.
var ErrCredentialFeed = errors.New("bridge: credential headers")

// CredentialFeed needs Linux.
type CredentialFeed struct{}

// NewCredentialFeed needs Linux.
func NewCredentialFeed(int) (*CredentialFeed, error) {
	return nil, errors.New("bridge: credential headers need Linux")
}

// Header needs Linux.
func (*CredentialFeed) Header() (http.Header, error) {
	return nil, errors.New("bridge: credential headers need Linux")
}
