package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

func TestErrorBodyDeclarationsAreChecked(t *testing.T) {
	for name, decl := range map[string][]apiserver.ErrorBody{
		"status below 400": {{Status: http.StatusOK, Example: ipError{}}},
		"no example":       {{Status: http.StatusBadRequest}},
		"declared twice":   {{Status: 400, Example: ipError{}}, {Status: 400, Example: ipError{}}},
		"not a schema":     {{Status: 400, Example: make(chan int)}},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := apiserver.New(apiserver.Config[struct{}]{Getenv: func(string) string { return "" }, Logger: testkit.Logger()})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(p.(string), "error body") {
					t.Errorf("Register did not refuse the declaration: %v", p)
				}
			}()
			apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/x", ErrorBodies: decl},
				func(c *apiserver.Context[struct{}], in *struct{}) (item, error) { return item{}, nil })
		})
	}
}
