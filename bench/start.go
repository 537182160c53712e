package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startTarget starts one system and returns it ready for sessions.
func startTarget(ctx context.Context, cfg Config, client *mcp.Client, name, logDir string) (target, error) {
	kind, sdkEnv := cfg.kind(name), []string(nil)
	if v, ok := cfg.Variants[name]; ok {
		switch kind {
		case sysFloor, sysSupergateway, sysMCPProxy:
			cfg.WorkerEnv = append(slices.Clone(cfg.WorkerEnv), v.Env...)
		case sysMCPGate:
			cfg.MCPGateEnv = append(slices.Clone(cfg.MCPGateEnv), v.Env...)
		case sysMCPGateTLS:
			cfg.TLSEnv = append(slices.Clone(cfg.TLSEnv), v.Env...)
		case sysSDK, sysSDKStateless:
			sdkEnv = v.Env
		}
	}
	env := os.Environ()
	switch kind {
	case sysFloor:
		logf, err := os.Create(filepath.Join(logDir, name+".log"))
		if err != nil {
			return nil, err
		}
		// The log file stays open for the run; the process exit closes it.
		return &stdioTarget{client: client, argv: cfg.Worker, env: sessionEnv(env, cfg.WorkerEnv),
			stderr: logf, procfs: pfs()}, nil
	case sysSDK, sysSDKStateless, sysMCPGate:
		argv, extra := cfg.SDKServer, sdkEnv
		switch kind {
		case sysSDKStateless:
			argv = cfg.SDKStateless
		case sysMCPGate:
			argv, extra = cfg.MCPGate, cfg.MCPGateEnv
		}
		if len(argv) == 0 {
			return nil, errors.New("mcpbench: no command given")
		}
		// The worker environment is not for these: the sdk server is no
		// worker, and mcpgate gives its workers an environment of its own.
		p, endpoint, err := startHTTP(ctx, name, "", nil, argv, sessionEnv(env, extra), logDir, "http")
		if err != nil {
			return nil, err
		}
		return &httpTarget{client: client, endpoint: endpoint, procs: []*proc{p}, procfs: pfs(), perUserWorkers: kind == sysMCPGate}, nil
	case sysMCPGateTLS:
		return startTLS(ctx, cfg, client, name, env, logDir)
	case sysSupergateway:
		if len(cfg.Supergateway) == 0 {
			return nil, errors.New("mcpbench: no -supergateway program given")
		}
		// Stateful mode: one worker per session, as mcpgate does (stateless
		// would start a worker per request).
		argv := append(slices.Clone(cfg.Supergateway),
			"--stdio", shellQuote(cfg.Worker),
			"--outputTransport", "streamableHttp", "--stateful",
			"--port", "{port}", "--logLevel", "none")
		p, endpoint, err := startHTTP(ctx, name, "", nil, argv, sessionEnv(env, cfg.WorkerEnv), logDir, "http")
		if err != nil {
			return nil, err
		}
		return &httpTarget{client: client, endpoint: endpoint, procs: []*proc{p}, procfs: pfs()}, nil
	case sysMCPProxy:
		if len(cfg.MCPProxy) == 0 {
			return nil, errors.New("mcpbench: no -mcp-proxy program given")
		}
		// Its defaults but the address and the one transport the others
		// serve: one stdio child, started at once and shared by every
		// client of either protocol generation.
		argv := append(slices.Clone(cfg.MCPProxy),
			"--host", "{host}", "--port", "{port}", "--server", "stream", "--")
		argv = append(argv, cfg.Worker...)
		p, endpoint, err := startHTTP(ctx, name, "", nil, argv, sessionEnv(env, cfg.WorkerEnv), logDir, "http")
		if err != nil {
			return nil, err
		}
		return &httpTarget{client: client, endpoint: endpoint, procs: []*proc{p}, procfs: pfs()}, nil
	}
	return nil, fmt.Errorf("mcpbench: unknown system %q", kind)
}

// startTLS starts the test issuer, waits for its token, then starts mcpgate
// with TLS and auth against it. Both addresses are picked first: the
// issuer's tokens name the gateway's resource URI as their audience.
func startTLS(ctx context.Context, cfg Config, client *mcp.Client, name string, env []string, logDir string) (target, error) {
	if len(cfg.MCPGateTLS) == 0 || len(cfg.TLSIssuer) == 0 || cfg.TokenFile == "" || cfg.TLSCA == "" {
		return nil, errors.New("mcpbench: the TLS system needs -mcpgate-tls, -tls-issuer, -token-file and -tls-ca")
	}
	gwAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	issAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	v := addrVars(gwAddr)
	v["issuer"] = issAddr
	_ = os.Remove(v.expand([]string{cfg.TokenFile})[0])
	iss, err := startProc(name+"-issuer", v.expand(cfg.TLSIssuer), env, filepath.Join(logDir, name+"-issuer.log"))
	if err != nil {
		return nil, err
	}
	tok, err := waitFile(ctx, iss, v.expand([]string{cfg.TokenFile})[0], 30*time.Second)
	if err != nil {
		_ = iss.stop(time.Second)
		return nil, err
	}
	var users, userTokens []string
	if cfg.UserTokens != "" {
		// The issuer says "ready" once every token is written.
		if _, err := waitLog(ctx, iss, "ready ", 30*time.Second); err != nil {
			_ = iss.stop(time.Second)
			return nil, err
		}
		if users, userTokens, err = readUserTokens(v.expand([]string{cfg.UserTokens})[0]); err != nil {
			_ = iss.stop(time.Second)
			return nil, err
		}
	}
	pem, err := os.ReadFile(cfg.TLSCA)
	if err != nil {
		_ = iss.stop(time.Second)
		return nil, fmt.Errorf("mcpbench: -tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		_ = iss.stop(time.Second)
		return nil, fmt.Errorf("mcpbench: -tls-ca %s holds no PEM certificate", cfg.TLSCA)
	}
	p, endpoint, err := startHTTP(ctx, name, gwAddr, vars{"issuer": issAddr}, cfg.MCPGateTLS, sessionEnv(env, cfg.TLSEnv), logDir, "https")
	if err != nil {
		_ = iss.stop(time.Second)
		return nil, err
	}
	return &httpTarget{client: client, endpoint: endpoint, procs: []*proc{p}, helpers: []*proc{iss}, procfs: pfs(),
		tls: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, token: string(tok),
		users: users, userTokens: userTokens, perUserWorkers: true, issuer: "https://" + issAddr}, nil
}

func pfs() ProcFS { return ProcFS{Root: "/proc"} }
