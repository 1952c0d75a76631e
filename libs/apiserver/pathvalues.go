package apiserver

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver/internal/schema"
)

// literalRoute is one gin route of an endpoint: its path, and the values of the
// parameters it has as literal segments (Operation.PathValues).
type literalRoute struct {
	path   string
	values gin.Params
}

// literalRoutes are the gin routes of the endpoint: its route itself, or with
// Operation.PathValues one route per combination of the listed values, in their order.
func (ep *endpoint[A, In, Out]) literalRoutes() []literalRoute {
	routes := []literalRoute{{path: ep.route}}
	for _, p := range ep.in.params {
		vals, ok := ep.op.PathValues[p.name]
		if !ok || p.in != "path" {
			continue
		}
		var next []literalRoute
		for _, r := range routes {
			segs := strings.Split(r.path, "/")
			i := slices.Index(segs, ":"+p.name)
			for _, v := range vals {
				segs[i] = v
				next = append(next, literalRoute{
					path:   strings.Join(segs, "/"),
					values: append(r.values[:len(r.values):len(r.values)], gin.Param{Key: p.name, Value: v}),
				})
			}
		}
		routes = next
	}
	return routes
}

// checkPathValues refuses Operation.PathValues that cannot be literal segments of the
// route or that the parameter's own constraints would refuse.
func (ep *endpoint[A, In, Out]) checkPathValues() error {
	segs := strings.Split(ep.route, "/")
	for name, vals := range ep.op.PathValues {
		if !slices.Contains(segs, ":"+name) {
			return fmt.Errorf("PathValues[%q]: the URL has no :%s segment", name, name)
		}
		if len(vals) == 0 {
			return fmt.Errorf("PathValues[%q]: no values", name)
		}
		i := slices.IndexFunc(ep.in.params, func(p param) bool { return p.in == "path" && p.name == name })
		p := &ep.in.params[i] // newBinder requires a field for every URL parameter
		if t := ep.in.typ.FieldByIndex(p.index).Type; t.Kind() != reflect.String {
			return fmt.Errorf("PathValues[%q]: the parameter is a %s; listed values are for strings", name, t)
		}
		seen := map[string]bool{}
		for _, v := range vals {
			switch {
			case v == "" || strings.ContainsAny(v, "/?#") || v[0] == ':' || v[0] == '*':
				return fmt.Errorf("PathValues[%q]: %q cannot be a path segment", name, v)
			case seen[v]:
				return fmt.Errorf("PathValues[%q]: %q is listed twice", name, v)
			}
			seen[v] = true
			field := reflect.New(ep.in.typ).Elem().FieldByIndex(p.index)
			if err := p.node.SetText(field, v); err != nil {
				return fmt.Errorf("PathValues[%q]: %q: %v", name, v, err)
			}
			var errs schema.Errors
			if p.node.CheckValue(field, p.fullName, &errs); len(errs) > 0 {
				return fmt.Errorf("PathValues[%q]: %q: %s", name, v, errs[0].Message)
			}
		}
	}
	return nil
}

// routeLabel is the label requests to gin's route (c.FullPath()) are counted and logged
// under: the template of an endpoint registered once per PathValues value, else route.
func (s *Server[A]) routeLabel(route string) string {
	if len(s.routeLabels) != 0 {
		if t, ok := s.routeLabels[route]; ok {
			return t
		}
	}
	return route
}
