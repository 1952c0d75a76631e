// geoip's main operations through a client oapi-codegen generates from the
// served document: TestGeneratedClient in client_test.go copies this file
// into a temporary module beside that client and runs it against a live
// server on the fixture database.
package genclient

import (
	"context"
	"net/http"
	"os"
	"testing"

	"genclient/apiclient"
)

func TestGeoIPThroughGeneratedClient(t *testing.T) {
	c, err := apiclient.NewClientWithResponses(os.Getenv("API_URL"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	one, err := c.GetIpJsonWithResponse(ctx, "81.2.69.160", nil)
	if err != nil || one.JSON200 == nil {
		t.Fatalf("GET /{ip}/json/: %v %v", err, one.Status())
	}
	if one.JSON200.City != "Berlin" || one.JSON200.CountryName != "Germany" || one.JSON200.InEu != true {
		t.Errorf("JSON: %+v", *one.JSON200)
	}
	etag := one.HTTPResponse.Header.Get("ETag")
	again, err := c.GetIpJsonWithResponse(ctx, "81.2.69.160", &apiclient.GetIpJsonParams{IfNoneMatch: &etag})
	if err != nil || again.StatusCode() != http.StatusNotModified {
		t.Errorf("If-None-Match: %v %d", err, again.StatusCode())
	}
	bad, err := c.GetIpJsonWithResponse(ctx, "not-an-ip", nil)
	if err != nil || bad.JSON400 == nil {
		t.Fatalf("invalid address: %v %s", err, bad.Body)
	}
	if ae, err := bad.JSON400.AsAddressError(); err != nil || !ae.Error || ae.Ip != "not-an-ip" || ae.Reason != os.Getenv("REASON_INVALID") {
		t.Errorf("invalid address: %+v %v (%s)", ae, err, bad.Body)
	}

	y, err := c.GetIpYamlWithResponse(ctx, "81.2.69.160", nil)
	// snake_case keys decode because the client is generated with yaml tags
	// (GeneratedClient.YAMLTags); without them go.yaml.in/yaml/v3 matches
	// lowercased Go field names and country_name would stay empty.
	if err != nil || y.YAML200 == nil || y.YAML200.City != "Berlin" || y.YAML200.Latitude == 0 ||
		y.YAML200.CountryName != "Germany" || y.YAML200.CountryCodeIso3 != "DEU" || y.YAML200.UtcOffset == "" {
		t.Errorf("YAML: %v %s", err, y.Body)
	}

	batch, err := c.PostBatchWithResponse(ctx, apiclient.PostBatchJSONRequestBody{"81.2.69.160", "nonsense"})
	if err != nil || batch.JSON200 == nil || len(*batch.JSON200) != 2 {
		t.Fatalf("POST /batch: %v %s", err, batch.Body)
	}
	if b := *batch.JSON200; b[0].City != "Berlin" || b[1].Error == nil || !*b[1].Error {
		t.Errorf("batch: %+v", b)
	}

	mine, err := c.GetJsonWithResponse(ctx, nil)
	if err != nil || mine.JSON200 == nil || mine.JSON200.Ip == "" {
		t.Errorf("GET /json/: %v %s", err, mine.Body)
	}
	city, err := c.GetIpFieldWithResponse(ctx, "81.2.69.160", "city", nil)
	if err != nil || city.StatusCode() != http.StatusOK || string(city.Body) != "Berlin" {
		t.Errorf("GET /{ip}/city/: %v %d %q", err, city.StatusCode(), city.Body)
	}
}
