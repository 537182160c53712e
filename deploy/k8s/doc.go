// Package k8s holds no code: its test decodes every Kubernetes manifest
// under deploy/k8s strictly into its API type (an unknown or misspelt
// field is an error), so that the manifests are checked offline in make
// test. It is a module of its own so that mcpgate does not depend on the
// Kubernetes libraries.
package k8s
