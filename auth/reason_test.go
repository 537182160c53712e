package auth

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestReason: every check and kind has a name of its own, found through
// wrapping; anything else is "other". The names are metric labels: a
// fixed set, never token contents.
func TestReason(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range reasons {
		assert.False(t, seen[r.name], "name %q used twice", r.name)
		seen[r.name] = true
		assert.Equal(t, r.name, Reason(fmt.Errorf("verify: %w", r.err)))
	}
	assert.Equal(t, "expired", Reason(ErrExpired))
	assert.Equal(t, "invalidToken", Reason(fmt.Errorf("%w: something new", ErrInvalidToken)))
	assert.Equal(t, "other", Reason(errors.New("boom")))
}
