package layertest

import (
	"slices"
	"testing"
)

// graph is a small go list -deps answer: domain imports text and store,
// store imports the framework through a helper.
func graph() map[string]*pkg {
	return map[string]*pkg{
		"ex/domain":     {ImportPath: "ex/domain", Imports: []string{"fmt", "x/text/width", "ex/store"}},
		"fmt":           {ImportPath: "fmt", Standard: true, DepOnly: true},
		"x/text/width":  {ImportPath: "x/text/width", DepOnly: true},
		"ex/store":      {ImportPath: "ex/store", DepOnly: true, Imports: []string{"ex/helper"}},
		"ex/helper":     {ImportPath: "ex/helper", DepOnly: true, Imports: []string{"web/framework"}},
		"web/framework": {ImportPath: "web/framework", DepOnly: true, Imports: []string{"fmt"}},
	}
}

func TestViolationsNameTheChain(t *testing.T) {
	got := violations(graph(), Rule{Allow: []string{"x/text", "ex/store", "ex/helper"}})
	if want := []string{"ex/domain -> ex/store -> ex/helper -> web/framework"}; !slices.Equal(got, want) {
		t.Errorf("allow list: %q; want %q", got, want)
	}
	got = violations(graph(), Rule{Deny: []string{"web"}})
	if want := []string{"ex/domain -> ex/store -> ex/helper -> web/framework"}; !slices.Equal(got, want) {
		t.Errorf("deny list: %q; want %q", got, want)
	}
}

func TestViolationsPassWhatIsAllowed(t *testing.T) {
	if got := violations(graph(), Rule{Allow: []string{"x/text", "ex", "web/framework"}}); len(got) != 0 {
		t.Errorf("everything allowed: %q", got)
	}
	if got := violations(graph(), Rule{Deny: []string{"web/frame"}}); len(got) != 0 {
		t.Errorf("a prefix that is not a path element matched: %q", got)
	}
}

func TestNoPackageIsAViolation(t *testing.T) {
	if got := violations(map[string]*pkg{}, Rule{Packages: []string{"./gone"}}); len(got) != 1 {
		t.Errorf("a rule that matches nothing passed: %q", got)
	}
}
