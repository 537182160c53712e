package auth_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/mcpgate/mcpgate/auth"
)

// Example shows the wiring a gateway needs: the middleware in front of
// /mcp, the metadata handler at the well-known paths, open without a token.
func Example() {
	a, err := auth.New(context.Background(), auth.Options{
		Issuer:         "https://kc.example/realms/mcp",
		Resource:       "https://mcp.example/mcp",
		RequiredScopes: []string{"mcp:use"},
		WriteScope:     "mcp:write",
		ExtraScopes:    []string{"profile", "offline_access"},
		UserClaim:      "preferred_username",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()

	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := auth.PrincipalFrom(r.Context())
		fmt.Fprintln(w, p.UserID, p.ReadOnly)
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.Middleware(mcp))
	for _, p := range a.MetadataPaths() {
		mux.Handle(p, a.MetadataHandler())
	}
	_ = &http.Server{Addr: "127.0.0.1:8443", Handler: mux}
}
