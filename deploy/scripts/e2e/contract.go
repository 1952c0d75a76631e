package main

// Everything the checks assume about the services' URLs and wire formats is in this file,
// so that a change to the chat protocol or to geoip's JSON is one edit here.

import (
	chatclient "github.com/apistack/platform/services/chat/client"
)

// Paths as seen through the proxy (the prefix is what Caddy strips).
const (
	geoipPrefix     = "/geoip"
	chatPrefix      = "/chat"
	geoipLookupIP   = "8.8.8.8"
	geoipLookupPath = geoipPrefix + "/" + geoipLookupIP + "/json/"
	// The sample database embedded in geoip places geoipLookupIP here.
	geoipWantCountry = "US"

	// The proxy names the replica that answered in this response header.
	servedByHeader = "X-Served-By"
)

// proxyIndexLinks are the pages the proxy's HTML index at / must link to (as paths from
// the root); the smoke check follows every link of the page, these included.
var proxyIndexLinks = []string{
	geoipPrefix + "/", geoipLookupPath, geoipPrefix + "/docs",
	chatPrefix + "/", chatPrefix + "/docs",
}

// geoipIndex is the part of geoip's root (GET /geoip/, JSON for API clients) the checks
// read: links relative to the page, and the endpoints.
type geoipIndex struct {
	Docs      string   `json:"docs"`
	OpenAPI   string   `json:"openapi"`
	Health    string   `json:"health"`
	Endpoints []string `json:"endpoints"`
}

// metricsPaths are ways to ask the proxy for a service's /metrics, which it must refuse:
// the plain path, another case, a trailing slash, a doubled slash, a dot segment and a
// percent-escape (Caddy's path matcher sees them all as /metrics; gin would too for some).
var metricsPaths = []string{
	geoipPrefix + "/metrics", chatPrefix + "/metrics",
	geoipPrefix + "/METRICS", chatPrefix + "/metrics/",
	geoipPrefix + "//metrics", chatPrefix + "/./metrics", chatPrefix + "/%6detrics",
}

// geoipLocation is the part of a geoip lookup the checks read.
type geoipLocation struct {
	IP      string `json:"ip"`
	Country string `json:"country"`
}

// openAPIDoc is the part of /openapi.json the checks read.
type openAPIDoc struct {
	OpenAPI string `json:"openapi"`
	Servers []struct {
		URL string `json:"url"`
	} `json:"servers"`
}

// chatMessage is a stored message, as the chat's Go client reads it (the protocol
// itself is the client's: services/chat/client).
type chatMessage = chatclient.Message
