// The tests of jwtvalidator live here, beside the issuer and signing
// fixtures of jwtauth_test.go they use.
package jwtauth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/libs/apiserver/jwtvalidator"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

type who struct{ Sub, Via string }

type whoOut struct {
	Sub string `json:"sub"`
	Via string `json:"via"`
}

// server is an apiserver with one authenticated endpoint that accepts the
// local token "local-token" and JWTs checked by v.
func server(t testing.TB, v *jwtauth.Verifier) http.Handler {
	t.Helper()
	local := func(tok string, _ *http.Request) apiserver.AuthResult[who] {
		if tok == "local-token" {
			return apiserver.AuthResult[who]{Valid: true, Context: who{Sub: "bot", Via: "local"}}
		}
		return apiserver.AuthResult[who]{Valid: false}
	}
	fromClaims := func(_ *http.Request, c jwtauth.Claims) apiserver.AuthResult[who] {
		return apiserver.AuthResult[who]{Valid: true, Context: who{Sub: c.Subject, Via: "jwt"}}
	}
	s, err := apiserver.New(apiserver.Config[who]{
		Getenv:         func(string) string { return "" },
		Env:            "production",
		RateLimitMax:   1 << 30,
		Logger:         testkit.Logger(),
		TokenValidator: jwtvalidator.New(v, fromClaims, local),
	})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/me", Authenticated: true},
		func(c *apiserver.Context[who], _ *struct{}) (whoOut, error) {
			return whoOut{Sub: c.Auth.Sub, Via: c.Auth.Via}, nil
		})
	return s.Handler()
}

func get(h http.Handler, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/me", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestValidatorAcceptsBothKinds(t *testing.T) {
	is := newIssuer(t)
	h := server(t, newVerifier(t, jwtauth.Config{Secret: secret, JWKSURL: is.srv.URL}))
	now := time.Now()
	for tok, want := range map[string]whoOut{
		"local-token": {Sub: "bot", Via: "local"},
		sign(t, jwt.SigningMethodHS256, "", secret, claimsAt(now, "u1")):     {Sub: "u1", Via: "jwt"},
		sign(t, jwt.SigningMethodRS256, "rsa1", is.rsa, claimsAt(now, "u2")): {Sub: "u2", Via: "jwt"},
	} {
		w := get(h, tok)
		var got whoOut
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &got) != nil || got != want {
			t.Errorf("%.20s: %d %s; want %+v", tok, w.Code, w.Body, want)
		}
	}
	if w := get(h, "other-local"); w.Code != http.StatusForbidden {
		t.Errorf("unknown local token: %d; want the local validator's 403", w.Code)
	}
}

// TestValidatorRefusesWith401: a refused JWT is a 401 with the library's
// error body and WWW-Authenticate; unfetchable keys are a 503.
func TestValidatorRefusesWith401(t *testing.T) {
	is := newIssuer(t)
	h := server(t, newVerifier(t, jwtauth.Config{Secret: secret, JWKSURL: is.srv.URL}))
	expired := sign(t, jwt.SigningMethodHS256, "", secret, jwt.MapClaims{"sub": "u1", "exp": time.Now().Add(-time.Hour).Unix()})
	for tok, msg := range map[string]string{
		expired: "token expired",
		sign(t, jwt.SigningMethodHS256, "", []byte("another-secret-another-secret-xx"), claimsAt(time.Now(), "u1")): "invalid token",
	} {
		w := get(h, tok)
		var body map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != 401 || body["statusCode"] != float64(401) || body["error"] != "Unauthorized" || body["message"] != msg || w.Header().Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%d %v %v; want 401 %q", w.Code, w.Header(), body, msg)
		}
	}
	down := newIssuer(t)
	down.down.Store(true)
	h = server(t, newVerifier(t, jwtauth.Config{JWKSURL: down.srv.URL}))
	if w := get(h, sign(t, jwt.SigningMethodRS256, "rsa1", down.rsa, claimsAt(time.Now(), "u1"))); w.Code != http.StatusServiceUnavailable {
		t.Errorf("keys never fetched: %d %s; want 503", w.Code, w.Body)
	}
}

// TestAcceptsJWTDocumentsTheScheme: with AcceptsJWT the document lists the
// platformJWT bearer scheme (bearerFormat JWT) as an alternative.
func TestAcceptsJWTDocumentsTheScheme(t *testing.T) {
	for _, accepts := range []bool{false, true} {
		s, err := apiserver.New(apiserver.Config[who]{
			Getenv: func(string) string { return "" }, Logger: testkit.Logger(), AcceptsJWT: accepts,
			TokenValidator: func(string, *http.Request) apiserver.AuthResult[who] { return apiserver.AuthResult[who]{} },
		})
		if err != nil {
			t.Fatal(err)
		}
		apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/me", Authenticated: true},
			func(c *apiserver.Context[who], _ *struct{}) (whoOut, error) { return whoOut{}, nil })
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
		var doc struct {
			Components struct {
				SecuritySchemes map[string]map[string]string `json:"securitySchemes"`
			} `json:"components"`
			Paths map[string]map[string]struct {
				Security []map[string][]string `json:"security"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		jwtScheme, ok := doc.Components.SecuritySchemes["platformJWT"]
		sec := doc.Paths["/me"]["get"].Security
		if accepts != ok || (accepts && (jwtScheme["bearerFormat"] != "JWT" || jwtScheme["scheme"] != "bearer" || len(sec) != 2)) || (!accepts && len(sec) != 1) {
			t.Errorf("AcceptsJWT %v: schemes %v, security %v", accepts, doc.Components.SecuritySchemes, sec)
		}
	}
}
