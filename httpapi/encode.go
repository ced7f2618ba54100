package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/outpost-relay/outpost"
)

// MaxBodyBytes caps JSON request bodies.
const MaxBodyBytes = 64 << 10

// Encode writes v as JSON with status. When v does not encode, nothing is
// written and the error is returned, for the handler to return in turn.
func Encode(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the response: %w", err)
	}
	EncodeBytes(w, status, b)
	return nil
}

// EncodeBytes writes an already encoded JSON body.
func EncodeBytes(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(b)+1))
	w.WriteHeader(status)
	w.Write(b)
	w.Write([]byte{'\n'})
}

// ServeJSON serves a fixed JSON document, such as a service's OpenAPI document.
func ServeJSON(doc []byte) http.HandlerFunc {
	doc = bytes.TrimSpace(doc)
	return func(w http.ResponseWriter, r *http.Request) { EncodeBytes(w, http.StatusOK, doc) }
}

// Validator is a request type that checks itself after decoding (with a
// pointer receiver, so it can keep what it parsed).
type Validator interface{ Valid() error }

// Decode reads a JSON body of at most MaxBodyBytes into a T and, when *T is a
// Validator, validates it. Unknown fields are ignored; wrong types name the field.
func Decode[T any](w http.ResponseWriter, r *http.Request) (T, error) {
	var v T
	body, err := ReadBody(w, r)
	if err != nil {
		return v, err
	}
	if err := DecodeBytes(body, &v); err != nil {
		return v, err
	}
	if val, ok := any(&v).(Validator); ok {
		return v, val.Valid()
	}
	return v, nil
}

// ReadBody reads a request body of at most MaxBodyBytes.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, outpost.Errorf(outpost.TooLarge, "request_too_large", "the request body is larger than %d bytes", MaxBodyBytes)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, outpost.Errorf(outpost.TimedOut, "request_timeout", "the request body did not arrive in time")
	}
	if err != nil {
		return nil, outpost.Errorf(outpost.Invalid, "invalid_request", "could not read the request body")
	}
	return body, nil
}

// DecodeBytes decodes one JSON object into v with the error contract's messages.
func DecodeBytes(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return outpost.Errorf(outpost.Invalid, "invalid_json", "a JSON request body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	err := dec.Decode(v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return outpost.Errorf(outpost.Invalid, "invalid_json", "the request body must be a JSON object")
		}
		return outpost.Errorf(outpost.Invalid, "invalid_field", "field %q must be %s, got %s", field, jsonType(typeErr.Type.Kind().String()), typeErr.Value).With("field", field)
	case err != nil:
		return outpost.Errorf(outpost.Invalid, "invalid_json", "the request body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	// Only white space may follow the value. (Decoder.More would let a
	// stray ] or } through.)
	if _, err := dec.Token(); err != io.EOF {
		return outpost.Errorf(outpost.Invalid, "invalid_json", "the request body must hold one JSON object and nothing after it")
	}
	return nil
}

func jsonType(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "of another type"
}
