//go:build !linux

package credential

import (
	"errors"
	"os"
	"time"
)

// MaxHeaderFeedBytes bounds one message of a HeaderFeed.
const MaxHeaderFeedBytes = 128 << 10

// HeaderFeed needs Linux (a SOCK_SEQPACKET socket pair).
type HeaderFeed struct{}

// NewHeaderFeed needs Linux.
func NewHeaderFeed(Set) (*HeaderFeed, *os.File, error) {
	return nil, nil, errors.New("credential: header credentials need Linux")
}

// Send needs Linux.
func (*HeaderFeed) Send(Set) error { return errors.New("credential: header credentials need Linux") }

// Renew is zero.
func (*HeaderFeed) Renew() time.Time { return time.Time{} }

// Close does nothing.
func (*HeaderFeed) Close() error { return nil }
