package credential

// fileError is why a secret file was not read: its kind (ErrNoAccess,
// ErrRefused, ErrUnavailable) and a reason that names no secret.
type fileError struct {
	kind   error
	reason string
}
