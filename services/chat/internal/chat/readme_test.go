package chat

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEPermissionTable keeps the README's table equal to the Go table.
func TestREADMEPermissionTable(t *testing.T) {
	const path = "../../README.md"
	const begin, end = "<!-- permissions:begin -->\n", "<!-- permissions:end -->"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s: permission markers missing", path)
	}
	want := PermissionsMarkdown()
	if s[i+len(begin):j] == want {
		return
	}
	if os.Getenv("UPDATE_README") == "1" {
		s = s[:i+len(begin)] + want + s[j:]
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s: permission table is stale; run UPDATE_README=1 go test ./internal/chat -run TestREADMEPermissionTable", path)
}
