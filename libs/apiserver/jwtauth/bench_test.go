package jwtauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/apistack/platform/libs/apiserver/jwtauth"
)

// BenchmarkVerify is the JWT check one request costs, with the key cached
// (the JWKS is fetched once, before the timer starts).
func BenchmarkVerify(b *testing.B) {
	is := newIssuer(b)
	v := newVerifier(b, jwtauth.Config{Secret: secret, JWKSURL: is.srv.URL, Issuer: "https://id.example", Audience: "chat"})
	now := time.Now()
	for name, tok := range map[string]string{
		"HS256": sign(b, jwt.SigningMethodHS256, "", secret, claimsAt(now, "u1")),
		"RS256": sign(b, jwt.SigningMethodRS256, "rsa1", is.rsa, claimsAt(now, "u1")),
	} {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(context.Background(), tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
