package check

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/dlclark/regexp2"
	corev1 "k8s.io/api/core/v1"
)

// placeholderTokens are the CHAT_ADMIN_TOKEN values published in the repository; chat
// refuses them in production (services/chat/internal/config).
var placeholderTokens = []string{"dev-admin-token-change-me", "replace-with-a-long-random-token"}

// config is the one application ConfigMap (renamed with a content hash by kustomize).
func config(t *testing.T, tr *tree) *corev1.ConfigMap {
	t.Helper()
	for _, c := range tr.configMaps {
		if strings.HasPrefix(c.Name, "apistack-config") {
			return c
		}
	}
	t.Fatalf("%s: no apistack-config ConfigMap", tr.name)
	return nil
}

// checkEnvironment: production runs with a token of its own, development with the
// published one; the placeholder never meets NODE_ENV=production, which chat would refuse.
func checkEnvironment(t *testing.T, tr *tree, wantEnv string) {
	t.Helper()
	cm := config(t, tr)
	if env := cm.Data["NODE_ENV"]; env != wantEnv {
		t.Errorf("%s: NODE_ENV=%q, want %s", tr.name, env, wantEnv)
	}
	token := secretValue(secret(t, tr), "CHAT_ADMIN_TOKEN")
	for _, p := range placeholderTokens {
		if cm.Data["NODE_ENV"] == "production" && token == p {
			t.Errorf("%s: production with the published CHAT_ADMIN_TOKEN %q: chat refuses to start", tr.name, p)
		}
	}
}

// checkTrustedProxies: only a pod network may set X-Forwarded-For, not the whole of 10/8,
// which holds node, VPC and VPN addresses in many clusters.
func checkTrustedProxies(t *testing.T, tr *tree) {
	t.Helper()
	v := config(t, tr).Data["TRUSTED_PROXIES"]
	if v == "" {
		t.Fatalf("%s: no TRUSTED_PROXIES: the rate limit would count the ingress controller as one client", tr.name)
	}
	for _, s := range strings.Split(v, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			t.Errorf("%s: TRUSTED_PROXIES entry %q: %v", tr.name, s, err)
			continue
		}
		if p.Addr().Is4() && p.Bits() < 16 || p.Addr().Is6() && p.Bits() < 48 || !p.Addr().IsPrivate() {
			t.Errorf("%s: TRUSTED_PROXIES entry %s is wider than a pod network (or not private)", tr.name, p)
		}
	}
}

// checkIngressRoutes reads each Ingress path as ingress-nginx does with use-regex (a PCRE
// location ~* "^path", case-insensitive, on the decoded URI with slashes merged) and checks
// that /metrics is not routed while everything else is, rewritten to the path the service
// knows.
func checkIngressRoutes(t *testing.T, tr *tree) {
	t.Helper()
	for _, ing := range tr.ingresses {
		if ing.Annotations["nginx.ingress.kubernetes.io/use-regex"] != "true" {
			t.Errorf("%s: Ingress %s: the paths are regular expressions, use-regex must be on", tr.name, ing.Name)
		}
		target := ing.Annotations["nginx.ingress.kubernetes.io/rewrite-target"]
		prefix := "/" + ing.Name
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				re, err := regexp2.Compile("^"+p.Path, regexp2.IgnoreCase)
				if err != nil {
					t.Errorf("%s: Ingress %s path %q: %v", tr.name, ing.Name, p.Path, err)
					continue
				}
				for _, uri := range []string{"/metrics", "/metrics/", "/METRICS", "/Metrics/x"} {
					if m, _ := re.FindStringMatch(prefix + uri); m != nil {
						t.Errorf("%s: Ingress %s routes %s%s: /metrics must not be public", tr.name, ing.Name, prefix, uri)
					}
				}
				for uri, want := range map[string]string{"": "/", "/": "/", "/healthz": "/healthz", "/docs/index.html": "/docs/index.html",
					"/8.8.8.8/json/": "/8.8.8.8/json/", "/api/v1/ws": "/api/v1/ws", "/metricsx": "/metricsx", "/x/metrics": "/x/metrics"} {
					m, _ := re.FindStringMatch(prefix + uri)
					if m == nil {
						t.Errorf("%s: Ingress %s does not route %s%s", tr.name, ing.Name, prefix, uri)
						continue
					}
					if got := strings.ReplaceAll(target, "$2", m.GroupByNumber(2).String()); got != want {
						t.Errorf("%s: Ingress %s rewrites %s%s to %s, want %s", tr.name, ing.Name, prefix, uri, got, want)
					}
				}
			}
		}
	}
}
