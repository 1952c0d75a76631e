// Package layertest states which packages a layer may depend on, as a test:
// each module's layers_test.go lists its rules and Check fails on a new
// arrow, naming the import chain that brought it. It reads `go list -deps
// -json` (the go command the test runs under), so it sees exactly what the
// build sees, transitive dependencies included, and no test imports.
package layertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Rule is what the packages matching Packages may depend on, directly or
// through others. A path rule (Allow, Deny) names a package and everything
// under it: "golang.org/x/text" covers golang.org/x/text/width.
type Rule struct {
	// Why says what the rule keeps (shown with a failure).
	Why string
	// Packages are go list patterns, relative to the test's directory
	// ("../../internal/chat", "./jwtauth"); each must match a package.
	Packages []string
	// Allow, when not empty, lists the only packages besides the standard
	// library (and the ones matched by Packages) they may depend on.
	Allow []string
	// Deny lists packages they may not depend on.
	Deny []string
}

type pkg struct {
	ImportPath string
	Standard   bool
	DepOnly    bool
	Imports    []string
	Error      *struct{ Err string }
}

// Check runs go list once per rule and reports every dependency a rule
// forbids, with one chain of imports that reaches it.
func Check(t *testing.T, rules ...Rule) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	for _, r := range rules {
		pkgs, err := list(r.Packages)
		if err != nil {
			t.Fatalf("%s: %v", r.Why, err)
		}
		for _, bad := range violations(pkgs, r) {
			t.Errorf("%s\n\t%s", r.Why, bad)
		}
	}
}

// list is `go list -deps -json patterns`, by import path.
func list(patterns []string) (map[string]*pkg, error) {
	if len(patterns) == 0 {
		return nil, errors.New("a rule without packages")
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json=ImportPath,Standard,DepOnly,Imports,Error"}, patterns...)...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, errors.New("go list " + strings.Join(patterns, " ") + ": " + err.Error() + ": " + stderr.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(&out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if p.Error != nil {
			return nil, errors.New(p.ImportPath + ": " + p.Error.Err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs, nil
}

// violations is the rule's verdict on pkgs (go list -deps output): one line
// per forbidden dependency, "a -> b -> c", shortest chain from a root.
func violations(pkgs map[string]*pkg, r Rule) []string {
	var roots []string
	for path, p := range pkgs {
		if !p.DepOnly {
			roots = append(roots, path)
		}
	}
	slices.Sort(roots)
	if len(roots) == 0 {
		return []string{"no package matches " + strings.Join(r.Packages, " ")}
	}
	var bad []string
	reported := map[string]bool{}
	for _, root := range roots {
		// Breadth first, so the chain shown is a shortest one.
		from := map[string]string{root: ""}
		queue := []string{root}
		for len(queue) > 0 {
			path := queue[0]
			queue = queue[1:]
			p := pkgs[path]
			if p == nil {
				continue
			}
			if path != root && forbidden(path, p.Standard, r, roots) {
				// One line per forbidden package; what it imports in
				// turn is its own business.
				if reported[path] {
					continue
				}
				reported[path] = true
				chain := []string{path}
				for at := from[path]; at != ""; at = from[at] {
					chain = append(chain, at)
				}
				slices.Reverse(chain)
				bad = append(bad, strings.Join(chain, " -> "))
				continue
			}
			for _, imp := range p.Imports {
				if _, seen := from[imp]; !seen {
					from[imp] = path
					queue = append(queue, imp)
				}
			}
		}
	}
	return bad
}

func forbidden(path string, standard bool, r Rule, roots []string) bool {
	for _, d := range r.Deny {
		if under(path, d) {
			return true
		}
	}
	if len(r.Allow) == 0 || standard || slices.Contains(roots, path) {
		return false
	}
	return !slices.ContainsFunc(r.Allow, func(a string) bool { return under(path, a) })
}

func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}
