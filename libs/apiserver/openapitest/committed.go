package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Committed is a service's OpenAPI document as committed, so that a review
// shows every change to the API. Check keeps it equal to the live document
// and refuses a breaking change (see Breaking) that AllowFile does not list.
type Committed struct {
	// Path is the committed document, relative to the test's directory.
	Path string
	// AllowFile lists the breaking changes accepted in review, one a line
	// as Breaking writes them; it need not exist.
	AllowFile string
	// UpdateHint is the command that rewrites Path, for the failure message.
	UpdateHint string
}

// Indent is a served document as committed: indented, one final newline.
func Indent(served []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, served, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// Check fails t with what Compare finds.
func (c Committed) Check(t *testing.T, live []byte, update bool) {
	t.Helper()
	if err := c.Compare(live, update); err != nil {
		t.Error(err)
	}
}

// Compare compares the committed document with live (as Indent writes
// it). With update it rewrites the committed document instead, unless the
// change breaks clients and is not allowed. With OPENAPI_BASE set to a git
// revision (CI sets the pull request's base branch), it also checks the
// committed document against the one committed at that revision, so a
// breaking change cannot arrive by editing the document by hand.
func (c Committed) Compare(live []byte, update bool) error {
	committed, err := os.ReadFile(c.Path)
	if err != nil && !(update && errors.Is(err, os.ErrNotExist)) {
		return err
	}
	if update {
		if committed != nil {
			if err := CheckCompatible(committed, live, c.AllowFile); err != nil {
				return fmt.Errorf("%s not rewritten: %w", c.Path, err)
			}
		}
		return os.WriteFile(c.Path, live, 0o644)
	}
	if !bytes.Equal(committed, live) {
		return fmt.Errorf("%s is not the live document: run %s", c.Path, c.UpdateHint)
	}
	base := os.Getenv("OPENAPI_BASE")
	if base == "" {
		return nil
	}
	// "rev:./path" names the path relative to the working directory.
	out, err := exec.Command("git", "show", base+":./"+c.Path).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && (strings.Contains(string(exit.Stderr), "does not exist") || strings.Contains(string(exit.Stderr), "but not in")) {
			return nil // new since base
		}
		return fmt.Errorf("git show %s:./%s: %w", base, c.Path, err)
	}
	if err := CheckCompatible(out, committed, c.AllowFile); err != nil {
		return fmt.Errorf("%s against %s: %w", c.Path, base, err)
	}
	return nil
}
