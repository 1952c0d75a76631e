package openapitest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Breaking lists the changes from the document oldJSON to newJSON that can
// break a client written against the old one (oasdiff's idea, kept small):
// a removed path or operation; a new required parameter, request body or
// request field, or a request value the old document allowed and the new
// one refuses (a narrowed type or enum); a removed response field or a
// response value of a type the old document did not allow. Each change is
// one line naming where it is; the list is sorted. Additions that old
// clients never see (new paths, operations, optional fields) are not
// breaking.
func Breaking(oldJSON, newJSON []byte) ([]string, error) {
	oldDoc, err := Load(oldJSON)
	if err != nil {
		return nil, fmt.Errorf("old document: %w", err)
	}
	newDoc, err := Load(newJSON)
	if err != nil {
		return nil, fmt.Errorf("new document: %w", err)
	}
	d := &differ{seen: map[[2]*openapi3.Schema]bool{}}
	newPaths := newDoc.Paths.Map()
	for path, oldItem := range oldDoc.Paths.Map() {
		newItem := newPaths[path]
		if newItem == nil {
			d.add("removed path %s", path)
			continue
		}
		newOps := newItem.Operations()
		for method, oldOp := range oldItem.Operations() {
			where := method + " " + path
			newOp := newOps[method]
			if newOp == nil {
				d.add("removed operation %s", where)
				continue
			}
			d.parameters(where, append(slices.Clone(oldItem.Parameters), oldOp.Parameters...), append(slices.Clone(newItem.Parameters), newOp.Parameters...))
			d.requestBody(where, oldOp.RequestBody, newOp.RequestBody)
			d.responses(where, oldOp.Responses, newOp.Responses)
		}
	}
	sort.Strings(d.changes)
	return slices.Compact(d.changes), nil
}

// CheckCompatible returns an error listing every change Breaking finds from
// oldJSON to newJSON that allowFile does not list. allowFile holds the
// breaking changes a reviewer accepted, one a line exactly as Breaking
// writes them ('#' starts a comment); a missing file allows none.
func CheckCompatible(oldJSON, newJSON []byte, allowFile string) error {
	changes, err := Breaking(oldJSON, newJSON)
	if err != nil {
		return err
	}
	allowed, err := readAllowed(allowFile)
	if err != nil {
		return err
	}
	var refused []string
	for _, c := range changes {
		if !allowed[c] {
			refused = append(refused, c)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return fmt.Errorf("%d breaking change(s) to the API, not listed in %s:\n\t%s\n(if each is intended, add its line to %[2]s)",
		len(refused), allowFile, strings.Join(refused, "\n\t"))
}

func readAllowed(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	allowed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			allowed[line] = true
		}
	}
	return allowed, sc.Err()
}

type differ struct {
	changes []string
	// seen stops the walk of a recursive schema: a pair is compared once.
	seen map[[2]*openapi3.Schema]bool
}

func (d *differ) add(format string, args ...any) {
	d.changes = append(d.changes, fmt.Sprintf(format, args...))
}

func (d *differ) parameters(where string, oldParams, newParams openapi3.Parameters) {
	old := map[string]*openapi3.Parameter{}
	for _, p := range oldParams {
		if p.Value != nil {
			old[p.Value.In+" "+p.Value.Name] = p.Value
		}
	}
	for _, p := range newParams {
		np := p.Value
		if np == nil {
			continue
		}
		key := np.In + " " + np.Name
		op := old[key]
		switch {
		case op == nil && np.Required:
			d.add("%s: new required parameter %s", where, key)
		case op != nil && np.Required && !op.Required:
			d.add("%s: parameter %s became required", where, key)
		case op != nil && op.Schema != nil && np.Schema != nil:
			d.schema(where+": parameter "+key, op.Schema.Value, np.Schema.Value, true)
		}
	}
}

func (d *differ) requestBody(where string, oldBody, newBody *openapi3.RequestBodyRef) {
	if newBody == nil || newBody.Value == nil {
		return
	}
	if oldBody == nil || oldBody.Value == nil {
		if newBody.Value.Required {
			d.add("%s: new required request body", where)
		}
		return
	}
	if newBody.Value.Required && !oldBody.Value.Required {
		d.add("%s: request body became required", where)
	}
	for mt, oldMedia := range oldBody.Value.Content {
		newMedia := newBody.Value.Content[mt]
		if newMedia == nil {
			d.add("%s: request body: removed media type %s", where, mt)
			continue
		}
		if oldMedia.Schema != nil && newMedia.Schema != nil {
			d.schema(where+": request body "+mt, oldMedia.Schema.Value, newMedia.Schema.Value, true)
		}
	}
}

func (d *differ) responses(where string, oldResps, newResps *openapi3.Responses) {
	if oldResps == nil || newResps == nil {
		return
	}
	for status, oldResp := range oldResps.Map() {
		newResp := newResps.Value(status)
		if oldResp.Value == nil || newResp == nil || newResp.Value == nil {
			continue // a status no longer answered is not a client's break
		}
		at := where + " " + status
		for name, h := range oldResp.Value.Headers {
			if h.Value == nil || !h.Value.Required {
				continue
			}
			if nh := newResp.Value.Headers[name]; nh == nil || nh.Value == nil || !nh.Value.Required {
				d.add("%s: removed required response header %s", at, name)
			}
		}
		for mt, oldMedia := range oldResp.Value.Content {
			newMedia := newResp.Value.Content[mt]
			if newMedia == nil {
				d.add("%s: removed response media type %s", at, mt)
				continue
			}
			if oldMedia.Schema != nil && newMedia.Schema != nil {
				d.schema(at+" "+mt, oldMedia.Schema.Value, newMedia.Schema.Value, false)
			}
		}
	}
}

// schema compares one schema of a request (a value the client sends) or
// of a response (one it reads).
func (d *differ) schema(where string, old, new *openapi3.Schema, request bool) {
	if old == nil || new == nil || d.seen[[2]*openapi3.Schema{old, new}] {
		return
	}
	d.seen[[2]*openapi3.Schema{old, new}] = true
	oldTypes, newTypes := typeSet(old), typeSet(new)
	if request {
		// Every type the client may send must still be accepted.
		if len(newTypes) > 0 {
			if lost := missing(oldTypes, newTypes, len(oldTypes) == 0); len(lost) > 0 {
				d.add("%s: narrowed type: %s no longer accepted", where, strings.Join(lost, ", "))
			}
		}
		if len(new.Enum) > 0 {
			if lost := enumMissing(old.Enum, new.Enum); len(lost) > 0 || len(old.Enum) == 0 {
				if len(old.Enum) == 0 {
					d.add("%s: narrowed to an enum", where)
				} else {
					d.add("%s: narrowed enum: %s no longer accepted", where, strings.Join(lost, ", "))
				}
			}
		}
		oldReq := map[string]bool{}
		for _, r := range old.Required {
			oldReq[r] = true
		}
		for _, r := range new.Required {
			if !oldReq[r] {
				d.add("%s: new required field %s", where, r)
			}
		}
	} else {
		// The client must not meet a type it was told it would never see.
		if len(oldTypes) > 0 {
			if added := missing(newTypes, oldTypes, len(newTypes) == 0); len(added) > 0 {
				d.add("%s: response type widened: %s", where, strings.Join(added, ", "))
			}
		}
		newReq := map[string]bool{}
		for _, r := range new.Required {
			newReq[r] = true
		}
		for _, r := range old.Required {
			if !newReq[r] {
				d.add("%s: response field %s no longer required", where, r)
			}
		}
	}
	for name, op := range old.Properties {
		np := new.Properties[name]
		if np == nil {
			if !request {
				d.add("%s: removed response field %s", where, name)
			}
			continue
		}
		d.schema(where+"."+name, op.Value, np.Value, request)
	}
	if old.Items != nil && new.Items != nil {
		d.schema(where+"[]", old.Items.Value, new.Items.Value, request)
	}
	d.variants(where, "oneOf", old.OneOf, new.OneOf, request)
	d.variants(where, "anyOf", old.AnyOf, new.AnyOf, request)
	d.variants(where, "allOf", old.AllOf, new.AllOf, request)
}

// variants compares the alternatives of a composition pairwise, in order.
func (d *differ) variants(where, kind string, old, new openapi3.SchemaRefs, request bool) {
	if request && len(new) > 0 && len(new) < len(old) && kind != "allOf" {
		d.add("%s: %s lost %d alternative(s)", where, kind, len(old)-len(new))
	}
	for i := range min(len(old), len(new)) {
		d.schema(fmt.Sprintf("%s(%s %d)", where, kind, i), old[i].Value, new[i].Value, request)
	}
}

func typeSet(s *openapi3.Schema) []string {
	if s.Type == nil {
		return nil
	}
	t := slices.Clone(s.Type.Slice())
	if s.Nullable && !slices.Contains(t, "null") {
		t = append(t, "null")
	}
	return t
}

// missing is what of want has lets through that has does not; an empty
// want (no type: anything) loses every type has leaves out, named "any".
func missing(want, has []string, wantAny bool) []string {
	if wantAny {
		return []string{"any"}
	}
	var out []string
	for _, t := range want {
		if slices.Contains(has, t) || (t == "integer" && slices.Contains(has, "number")) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func enumMissing(old, new []any) []string {
	var out []string
	for _, o := range old {
		if !slices.ContainsFunc(new, func(n any) bool { return fmt.Sprint(n) == fmt.Sprint(o) }) {
			out = append(out, fmt.Sprintf("%q", fmt.Sprint(o)))
		}
	}
	return out
}
