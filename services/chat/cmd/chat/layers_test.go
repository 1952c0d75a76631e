package main

import (
	"testing"

	"github.com/apistack/platform/libs/apiserver/layertest"
)

// TestLayers states what each layer may import (dependencies of
// dependencies included; tests' imports not): a new arrow fails here with
// the chain that made it.
func TestLayers(t *testing.T) {
	const (
		module = "github.com/apistack/platform/services/chat"
		// The HTTP and delivery side: none of it may reach the domain or
		// storage. (The standard library's net/http is not on this list:
		// golang.org/x/net/publicsuffix reaches it through net/http/cookiejar.)
		gin       = "github.com/gin-gonic/gin"
		websocket = "github.com/coder/websocket"
		library   = "github.com/apistack/platform/libs/apiserver"
		realtime  = module + "/internal/realtime"
		httpapi   = module + "/internal/httpapi"
		apierr    = module + "/internal/apierr"
	)
	layertest.Check(t,
		layertest.Rule{
			Why:      "the domain (internal/chat) imports the standard library and text packages only",
			Packages: []string{"../../internal/chat/..."},
			Allow: []string{
				"golang.org/x/text",
				// Links and look-alikes (links.go, normalize.go): the
				// IDNA and public suffix tables, confusable skeletons.
				// Pure functions over data, no I/O.
				"golang.org/x/net/idna",
				"golang.org/x/net/publicsuffix",
				"go.mau.fi/util/confusable",
			},
		},
		layertest.Rule{
			Why:      "storage (memory, redisstore) never imports delivery or HTTP",
			Packages: []string{"../../internal/memory/...", "../../internal/redisstore/..."},
			Deny:     []string{realtime, httpapi, apierr, gin, websocket, library + "/jwtvalidator", "github.com/prometheus"},
		},
		layertest.Rule{
			Why:      "the platform-token adapter imports the domain and jwtauth, not HTTP",
			Packages: []string{"../../internal/jwtidentity"},
			Deny:     []string{realtime, httpapi, apierr, gin, websocket, library + "/jwtvalidator"},
		},
	)
}
