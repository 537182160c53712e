package install

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Snippet is the entry as a person would paste it into the client's file:
// the servers object (JSON) or table (TOML) holding only this entry. It is
// what Plan writes, without the rest of the file.
func (c Client) Snippet(e Entry) (string, error) {
	body, err := e.body(c)
	if err != nil {
		return "", err
	}
	doc := map[string]any{c.servers: map[string]any{e.name(): body}}
	if c.format == formatTOML {
		var b bytes.Buffer
		enc := toml.NewEncoder(&b)
		enc.SetIndentTables(false)
		if err := enc.Encode(doc); err != nil {
			return "", err
		}
		return strings.TrimSpace(b.String()) + "\n", nil
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}

// InstallCommand is the mcpgate install command line that writes e into
// the client's user file.
func (c Client) InstallCommand(e Entry) string {
	cmd := "mcpgate install --client " + c.Name + " --url " + shellQuote(e.URL)
	if e.Name != "" && e.Name != "mcpgate" {
		cmd += " --name " + shellQuote(e.Name)
	}
	return cmd
}

// Command is the client's own command-line way to add a Streamable HTTP
// entry for e.URL, from its documentation; "" for a client that has none
// (or that gets a bridge entry).
func (c Client) Command(e Entry) string {
	if c.remote == nil || e.Bridge || CheckURL(e.URL, e.AnyPath) != nil {
		return ""
	}
	name := e.name()
	switch c.Name {
	case "claude-code":
		return "claude mcp add --transport http " + shellQuote(name) + " " + shellQuote(e.URL)
	case "gemini":
		return "gemini mcp add --transport http " + shellQuote(name) + " " + shellQuote(e.URL)
	case "vscode":
		b, _ := json.Marshal(map[string]any{"name": name, "type": "http", "url": e.URL})
		return "code --add-mcp " + shellQuote(string(b))
	}
	return ""
}

// InstallLink is the client's own install link for e, which the client
// opens with the entry filled in and asks the user to confirm: Cursor's
// cursor://anysphere.cursor-deeplink/mcp/install and VS Code's
// vscode:mcp/install. "" for the others.
func (c Client) InstallLink(e Entry) string {
	if c.remote == nil || e.Bridge || CheckURL(e.URL, e.AnyPath) != nil {
		return ""
	}
	switch c.Name {
	case "cursor":
		b, _ := json.Marshal(c.remote(e.URL))
		q := url.Values{"name": {e.name()}, "config": {base64.StdEncoding.EncodeToString(b)}}
		return "cursor://anysphere.cursor-deeplink/mcp/install?" + q.Encode()
	case "vscode":
		entry := c.remote(e.URL)
		entry["name"] = e.name()
		b, _ := json.Marshal(entry)
		return "vscode:mcp/install?" + url.QueryEscape(string(b))
	}
	return ""
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters that are safe bare.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
