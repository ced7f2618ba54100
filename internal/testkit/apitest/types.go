package apitest

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// MatchTypes fails t wherever a Go type a service answers and the schema its
// OpenAPI document gives for it differ, in either direction: a JSON field
// only one of them has, a field one requires and the other may leave out
// (omitempty), a JSON type the schema does not allow, a nil pointer where the
// schema allows no null. Nested structs, slices and maps are followed into
// their schemas. types maps a component schema ("Mint") or an operation
// ("GET /mints/{mint_id}/incidents": its 2xx JSON answer) to a value of the
// Go type.
func MatchTypes(t testing.TB, spec []byte, types map[string]any) {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(spec)
	if err != nil {
		t.Fatalf("openapi: load: %v", err)
	}
	keys := make([]string, 0, len(types))
	for k := range types {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := schemaOf(doc, k)
		if s == nil {
			t.Errorf("openapi: no schema %q in the document", k)
			continue
		}
		for _, p := range compare(k, reflect.TypeOf(types[k]), s, false) {
			t.Error("openapi: " + p)
		}
	}
}

// Unmatched lists the operations whose 2xx JSON answer is not one of keys
// (a component schema or an operation as MatchTypes takes them).
func Unmatched(t testing.TB, spec []byte, keys map[string]any) []string {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(spec)
	if err != nil {
		t.Fatalf("openapi: load: %v", err)
	}
	var out []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			ref := answer(op)
			if ref == nil || keys[key] != nil {
				continue
			}
			if name, ok := strings.CutPrefix(ref.Ref, "#/components/schemas/"); !ok || keys[name] == nil {
				out = append(out, key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// answer is op's first 2xx JSON answer, if any.
func answer(op *openapi3.Operation) *openapi3.SchemaRef {
	codes := slices.Sorted(func(yield func(string) bool) {
		for c := range op.Responses.Map() {
			if !yield(c) {
				return
			}
		}
	})
	for _, c := range codes {
		r := op.Responses.Value(c)
		if !strings.HasPrefix(c, "2") || r == nil || r.Value == nil {
			continue
		}
		if mt := r.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
			return mt.Schema
		}
	}
	return nil
}

func schemaOf(doc *openapi3.T, key string) *openapi3.Schema {
	if method, path, ok := strings.Cut(key, " "); ok {
		item := doc.Paths.Find(path)
		if item == nil || item.GetOperation(method) == nil {
			return nil
		}
		if s := answer(item.GetOperation(method)); s != nil {
			return s.Value
		}
		return nil
	}
	if s := doc.Components.Schemas[key]; s != nil {
		return s.Value
	}
	return nil
}

var (
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	timeType      = reflect.TypeFor[time.Time]()
)

// compare lists where the JSON form of typ differs from s; at names the
// place. omitempty fields are never null.
func compare(at string, typ reflect.Type, s *openapi3.Schema, omitempty bool) []string {
	if s == nil || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return nil
	}
	var out []string
	if typ.Kind() == reflect.Pointer {
		if !omitempty && !s.Type.Permits(openapi3.TypeNull) {
			out = append(out, at+": the Go type may be null, the document does not allow it")
		}
		typ = typ.Elem()
	}
	want := func(jsonType string) []string {
		if !s.Type.Permits(jsonType) {
			return append(out, at+": the Go type is a JSON "+jsonType+", the document says "+strings.Join(s.Type.Slice(), " or "))
		}
		return out
	}
	switch {
	case typ == timeType || typ.Implements(textMarshaler) || reflect.PointerTo(typ).Implements(textMarshaler):
		return want(openapi3.TypeString)
	case typ.Implements(jsonMarshaler) || reflect.PointerTo(typ).Implements(jsonMarshaler):
		return out // its own form
	}
	switch typ.Kind() {
	case reflect.Struct:
		out = want(openapi3.TypeObject)
		return append(out, compareFields(at, typ, s)...)
	case reflect.Slice, reflect.Array:
		out = want(openapi3.TypeArray)
		if s.Items != nil {
			out = append(out, compare(at+"[]", typ.Elem(), s.Items.Value, false)...)
		}
		return out
	case reflect.Map:
		out = want(openapi3.TypeObject)
		if ap := s.AdditionalProperties.Schema; ap != nil {
			out = append(out, compare(at+"{}", typ.Elem(), ap.Value, false)...)
		}
		return out
	case reflect.Interface:
		return out // any JSON value
	}
	return want(scalarType(typ.Kind()))
}

// scalarType is the JSON type encoding/json writes a scalar kind as.
func scalarType(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return openapi3.TypeString
	case reflect.Bool:
		return openapi3.TypeBoolean
	case reflect.Float32, reflect.Float64:
		return openapi3.TypeNumber
	}
	return openapi3.TypeInteger
}

// compareFields compares a struct's JSON fields with the schema's
// properties and its required list.
func compareFields(at string, typ reflect.Type, s *openapi3.Schema) []string {
	var out []string
	fields := jsonFields(typ)
	for name, f := range fields {
		p := s.Properties[name]
		if p == nil {
			out = append(out, at+"."+name+": in the Go type, not in the document")
			continue
		}
		if required := slices.Contains(s.Required, name); required == f.omitempty {
			out = append(out, at+"."+name+": "+map[bool]string{true: "required by the document, omitempty in the Go type",
				false: "always present in the Go type, not required by the document"}[required])
		}
		out = append(out, compare(at+"."+name, f.typ, p.Value, f.omitempty)...)
	}
	for name := range s.Properties {
		if _, ok := fields[name]; !ok {
			out = append(out, at+"."+name+": in the document, not in the Go type")
		}
	}
	sort.Strings(out)
	return out
}

type jsonField struct {
	typ       reflect.Type
	omitempty bool
}

// jsonFields are the fields encoding/json writes for typ, embedded structs
// flattened.
func jsonFields(typ reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for n, ef := range jsonFields(et) {
					if _, ok := out[n]; !ok {
						out[n] = ef
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = jsonField{typ: f.Type, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty") ||
			slices.Contains(strings.Split(opts, ","), "omitzero")}
	}
	return out
}
