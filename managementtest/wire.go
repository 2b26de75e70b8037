package managementtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/serviceconnect/management"
)

// maxRequestBody bounds a request body; the API's bodies are small.
const maxRequestBody = 1 << 20

// apiError is the error shape of the management endpoints.
type apiError struct {
	Reason       string `json:"reason"`
	ErrorMessage string `json:"error_message"`
}

// tokenError is the error shape of the token endpoint.
type tokenError struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// encode marshals v as JSON. It panics on failure: only seeded data could
// fail to encode, and seeding checks it.
func encode(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("managementtest: encoding: %v", err))
	}
	return data
}

// writeBody answers status with a JSON body, or an empty body when body is nil.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBody(w, status, encode(v))
}

// writeError answers the {reason, error_message} shape.
func writeError(w http.ResponseWriter, status int, reason, message string) {
	writeJSON(w, status, apiError{Reason: reason, ErrorMessage: message})
}

func unauthorized(w http.ResponseWriter) {
	writeError(w, http.StatusUnauthorized, management.ReasonUnauthorized, "")
}

func validationError(w http.ResponseWriter, message string) {
	writeError(w, http.StatusBadRequest, management.ReasonRequestValidation, message)
}

// isJSON reports whether a Content-Type header names JSON (parameters
// such as charset are allowed).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// readObject reads a request body that must be one JSON object, keeping
// its members raw. Numbers stay exact (decoded later with UseNumber).
func readObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		return nil, errors.New("the request body could not be read or is too large")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, errors.New("the request body must be a JSON object")
	}
	return obj, nil
}

// isNull reports whether a member is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// decodeExact decodes raw into v, keeping numbers as json.Number.
func decodeExact(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// optionalString decodes a member that is absent, null or a string.
func optionalString(obj map[string]json.RawMessage, key string) (*string, error) {
	raw := obj[key]
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s must be a string", key)
	}
	return &s, nil
}
