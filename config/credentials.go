package config

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/bridge"
	"github.com/mcpgate/mcpgate/credential"
	"github.com/mcpgate/mcpgate/worker"
)

// WorkerCredential is one entry of worker.credentials: a credential of the
// user's own that the user's worker gets (package credential, which owns
// the fields' meaning and validation).
type WorkerCredential struct {
	Env      string `mapstructure:"env"`
	EnvFile  string `mapstructure:"env_file"`
	Header   string `mapstructure:"header"`
	Prefix   string `mapstructure:"prefix"`
	From     string `mapstructure:"from"`
	Audience string `mapstructure:"audience"`
	Scope    string `mapstructure:"scope"`
	Dir      string `mapstructure:"dir"`
	Path     string `mapstructure:"path"`
}

// credentialKeys set credential.Options.
var credentialKeys = []binding{
	{"worker.credentials", "Credentials", nil},
}

// CredentialOptions maps worker.credentials to the credentials of the
// server c serves (a servers entry's credentials, in the configurations
// ServerConfigs makes).
func (c *Config) CredentialOptions() credential.Options {
	return credentialOptions(c.Worker.Credentials, c.RemoteURL() != "")
}

// credentialOptions maps one server's list of credentials; remote says
// the server is reached over HTTP (header credentials) rather than
// started as a stdio worker.
func credentialOptions(list []WorkerCredential, remote bool) credential.Options {
	o := credential.Options{Remote: remote}
	for _, w := range list {
		o.Credentials = append(o.Credentials, credential.Credential(w))
	}
	return o
}

// exchangesTokens reports whether any server's credentials come from
// token exchange, through the gateway's client (auth.introspection_client_id).
func (c *Config) exchangesTokens() bool {
	if c.CredentialOptions().Exchanges() {
		return true
	}
	for _, e := range c.Servers {
		if credentialOptions(e.Credentials, e.URL != "").Exchanges() {
			return true
		}
	}
	return false
}

// validateCredentials reports what worker.credentials cannot do.
func (c *Config) validateCredentials(v *validator) {
	c.validateCredentialList(v, "worker.credentials", c.Worker.Credentials, c.RemoteURL() != "")
}

// validateCredentialList reports what one server's credentials (set by
// key) cannot do: the credential package's own checks, the gateway
// client a token exchange needs, and the isolation every credential
// needs (CredentialIsolation).
func (c *Config) validateCredentialList(v *validator, key string, list []WorkerCredential, remote bool) {
	if len(list) == 0 {
		return
	}
	o := credentialOptions(list, remote)
	report(v, []binding{{key, "Credentials", nil}}, o.Validate())
	for i, cr := range list {
		if cr.Header != "" && bridge.ReservedHeader(cr.Header) {
			v.add(fmt.Sprintf("%s[%d].header", key, i), "%q is a header the gateway's relay sets itself; name the header the remote server reads the credential from", cr.Header)
		}
	}
	if o.Exchanges() {
		if !c.Authenticated() || c.Auth.IntrospectionClientID == "" || c.Auth.IntrospectionClientSecretFile == "" {
			v.add(key, "from: token_exchange needs auth.issuer, auth.introspection_client_id and auth.introspection_client_secret_file: the gateway's confidential client at the issuer, which exchanges the user's token")
		}
	}
	if why := c.CredentialIsolation(); why != "" {
		v.add(key, "%s", why)
	}
}

// CredentialIsolation says why the configured workers could read each
// other's credentials, or "" when they cannot. A worker's environment and
// fds are readable through /proc/<pid> by any process of the same OS
// account that may ptrace it; so a credential goes only to a worker that
// runs under its user's own account (worker.run_as: user), or whose
// sandbox is required (worker.sandbox.require: then the gateway starts
// no worker without Landlock and seccomp) and lets it read no other
// process's /proc entries: Landlock gives it /proc/self and a few
// system-wide files of /proc only, unless a read or write path opens
// /proc (or /) to it, and seccomp refuses ptrace and process_vm_readv.
func (c *Config) CredentialIsolation() string {
	w := c.Worker
	if w.RunAs == worker.RunAsUser {
		return ""
	}
	s := w.Sandbox
	if !s.Enabled || !s.Require {
		return "a worker's credential is readable by every other worker of the same OS account (/proc/<pid>/environ); set worker.run_as: user, or worker.sandbox.enabled and worker.sandbox.require (Landlock and seccomp keep a worker out of other processes' /proc entries)"
	}
	for _, p := range append(append([]string(nil), s.ReadPaths...), s.WritePaths...) {
		if opensProc(p) {
			return "worker.sandbox path " + strconv.Quote(p) + " lets a worker read other processes' /proc entries, and so other users' credentials; remove it or set worker.run_as: user"
		}
	}
	return ""
}

// opensProc reports whether the sandbox path p covers /proc/<pid> of
// other processes.
func opensProc(p string) bool {
	p = filepath.Clean(p)
	if p == "/" || p == "/proc" {
		return true
	}
	pid, ok := strings.CutPrefix(p, "/proc/")
	pid, _, _ = strings.Cut(pid, "/")
	return ok && pid != "" && strings.Trim(pid, "0123456789") == ""
}
