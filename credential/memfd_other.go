//go:build !linux

package credential

import (
	"errors"
	"os"
)

// OpenFiles needs Linux (memfd).
func (s Set) OpenFiles() ([]*os.File, []string, error) {
	if len(s.Files) == 0 {
		return nil, nil, nil
	}
	return nil, nil, errors.New("credential: env_file credentials need Linux (memfd)")
}
