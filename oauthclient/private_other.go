//go:build !unix

package oauthclient

// On Windows a file's mode bits say nothing about who may read it: the
// cache lives in the user's own profile (%AppData%), whose ACL admits
// only that user and the administrators.

func checkPrivateDir(string) error  { return nil }
func checkPrivateFile(string) error { return nil }
