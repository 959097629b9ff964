package httpapi_test

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPIServesGenerators checks what client generators read: every
// id in a path is an int64 integer from 1, and no property of a request
// body has a default (generators take a default as a reason to make the
// field required, and a client would then have to send max_steps).
func TestOpenAPIServesGenerators(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	for path, item := range doc.Paths.Map() {
		params := item.Parameters
		for method, op := range item.Operations() {
			for _, p := range append(params, op.Parameters...) {
				if p.Value == nil || p.Value.In != openapi3.ParameterInPath {
					continue
				}
				s := p.Value.Schema.Value
				if !s.Type.Is("integer") || s.Format != "int64" || s.Min == nil || *s.Min != 1 {
					t.Errorf("%s %s: path parameter %s is %v %q min %v, want an int64 integer from 1",
						method, path, p.Value.Name, s.Type, s.Format, s.Min)
				}
			}
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			for _, mt := range op.RequestBody.Value.Content {
				checkNoDefaults(t, method+" "+path, mt.Schema)
			}
		}
	}
}

// checkNoDefaults fails for each property of a body schema with a default.
func checkNoDefaults(t *testing.T, where string, ref *openapi3.SchemaRef) {
	t.Helper()
	if ref == nil || ref.Value == nil {
		return
	}
	for name, prop := range ref.Value.Properties {
		if prop.Value != nil && prop.Value.Default != nil {
			t.Errorf("%s: body property %s has a default (%v); say it in its description", where, name, prop.Value.Default)
		}
		checkNoDefaults(t, where, prop)
	}
	for _, sub := range ref.Value.AllOf {
		checkNoDefaults(t, where, sub)
	}
}
