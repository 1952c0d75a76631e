package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteJSONDestinations(t *testing.T) {
	var out bytes.Buffer
	if err := WriteJSON("", &out, map[string]int{"a": 1}); err != nil || out.Len() != 0 {
		t.Fatalf("empty path wrote %q, err %v", out.String(), err)
	}
	if err := WriteJSON("-", &out, map[string]int{"a": 1}); err != nil || !strings.Contains(out.String(), `"a": 1`) {
		t.Fatalf("stdout got %q, err %v", out.String(), err)
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(path, &out, map[string]int{"b": 2}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"b": 2`) {
		t.Fatalf("file holds %q", b)
	}
	if err := WriteJSON(filepath.Join(t.TempDir(), "missing", "r.json"), &out, 1); err == nil {
		t.Fatal("no error for a file that cannot be created")
	}
}
