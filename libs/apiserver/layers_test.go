package apiserver

import (
	"testing"

	"github.com/apistack/platform/libs/apiserver/layertest"
)

// TestLayers: the subpackages services use beside HTTP (identity, client
// addresses, counters, Redis, JSON) do not import gin, so a service's
// domain or storage may use them without the HTTP stack. The adapters to
// the library (jwtvalidator, tracing) are apart for that reason.
func TestLayers(t *testing.T) {
	layertest.Check(t, layertest.Rule{
		Why:      "identity and the other subpackages services use outside HTTP import no gin",
		Packages: []string{"./jwtauth", "./clientip", "./ratelimit", "./redisconn", "./jsontext", "./usage"},
		Deny:     []string{"github.com/gin-gonic/gin", "github.com/apistack/platform/libs/apiserver/jwtvalidator"},
	})
}
