package apiserver

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestUnsafeOnlyInFieldmem keeps the library's unsafe in one small package
// with its own benchmark and 32-bit test (internal/fieldmem): the request
// path and everything else reach memory only through it.
func TestUnsafeOnlyInFieldmem(t *testing.T) {
	fset := token.NewFileSet()
	var found int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "unsafe" {
				found++
				if filepath.Dir(path) != filepath.Join("internal", "fieldmem") {
					t.Errorf("%s imports unsafe: go through internal/fieldmem", path)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no file imports unsafe: the walk saw nothing (or fieldmem is gone; drop this test with it)")
	}
}
