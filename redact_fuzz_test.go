package management

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	engine "github.com/serviceconnect/management/internal/redact"
	"github.com/serviceconnect/management/internal/redact/echotest"
)

// FuzzRedaction embeds a credential (the client secret, the Basic
// credentials, the management token or the End User token, each derived
// from the input) in one of the encodings an echo takes, at an offset of
// a filler text, into every text an answer can carry: the reason and
// message, the OAuth error and description, a kept body (also cut at its
// limit), every kept header, a transport error. No output may hold it:
// Error(), the error's fields and headers, the log records, the Observer's
// hook arguments. The redactor's steps stay within the bound of its
// engine (StepsPerByte × len(text) × forms, which its tighter bound in the
// occurrences found never exceeds), for the text as it is and cut.
// Its seeds (testdata/fuzz/FuzzRedaction) run in every go test.
func FuzzRedaction(f *testing.F) {
	f.Add("k3yM4terial", uint8(0), uint8(0), uint16(3), "plain filler text")
	f.Add("s+cr/t=value", uint8(1), uint8(1), uint16(0), "")
	// Credentials and fillers of escape characters, the text an attacker
	// who chooses the End User token makes the service quote.
	f.Add(strings.Repeat(`\`, 64), uint8(5), uint8(9), uint16(7), strings.Repeat(`\`, 200))
	f.Add(strings.Repeat("%25", 20), uint8(3), uint8(8), uint16(1), strings.Repeat("%25", 100)+"%2")
	f.Add(strings.Repeat("&amp;", 12), uint8(6), uint8(12), uint16(40), strings.Repeat("&amp;amp;", 50))
	f.Add(strings.Repeat(`\%&+`, 16), uint8(4), uint8(11), uint16(99), strings.Repeat(`\u0026#x5c;%5C\\&#92;+%2B`, 20))
	// A credential inside a longer base64 line, at each offset; one holding
	// a percent escape of its own, quoted in JSON twice, after the start of
	// an escape that reads as one with its first characters.
	for offset := range 3 {
		f.Add("line"+strings.Repeat("x", offset), uint8(3+offset), fuzzEncoding(fmt.Sprintf("inside a longer base64 line at offset %d", offset)), uint16(6), "said: and more")
	}
	f.Add(fuzzMaterial(`tok\n%7Eq`), uint8(0), fuzzEncoding("JSON in JSON with a literal percent escape"), uint16(11), `a JSON \u00`)
	f.Fuzz(func(t *testing.T, material string, which, encoding uint8, offset uint16, filler string) {
		creds := fuzzCredentials(material)
		secret := creds[which%uint8(len(creds))]
		enc := fuzzEncodings[int(encoding)%len(fuzzEncodings)]
		echo, held := enc.Encode(secret), enc.Held(secret)
		at := int(offset) % (len(filler) + 1)
		text := filler[:at] + echo + filler[at:]
		r := newRedactor(creds...)
		for _, cut := range []bool{false, true} {
			if _, steps := r.engine.Redact(text, cut); steps > engine.StepsPerByte*max(len(text), 1)*r.engine.Forms() {
				t.Fatalf("%d steps for %d bytes and %d forms: more than %d per byte and form", steps, len(text), r.engine.Forms(), engine.StepsPerByte)
			}
		}
		for _, out := range fuzzOutputs(t, creds, int(which)%len(creds), text) {
			if strings.Contains(out, secret) || strings.Contains(out, held) {
				t.Fatalf("credential %q, encoded %s as %q, survives in:\n%s", secret, enc.Name, echo, out)
			}
		}
	})
}

// fuzzAlphabet is what the credentials are made of: a token's alphabet
// and the characters that start escapes (an End User token is the
// attacker's choice).
const fuzzAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=\\%&"

// fuzzCredentials derives the four credentials from material: each at least
// 8 bytes of fuzzAlphabet, marked so that no text of the SDK's own holds
// one.
func fuzzCredentials(material string) []string {
	var b strings.Builder
	for i := range len(material) {
		b.WriteByte(fuzzAlphabet[int(material[i])%len(fuzzAlphabet)])
	}
	m := b.String()
	for len(m) < 8 {
		m += "Q7"
	}
	m = truncate(m, 40)
	secret, token, eu := "C5"+m+" s", "M7"+m, "E3"+m
	basic := base64.StdEncoding.EncodeToString([]byte(fuzzID + ":" + secret))
	return []string{secret, basic, "Basic " + basic, token, "Bearer " + token, eu, "Bearer " + eu}
}

const fuzzID = "fuzz-client"

// fuzzMaterial is the material from which fuzzCredentials derives m (of
// fuzzAlphabet's characters), for seeds.
func fuzzMaterial(m string) string {
	b := make([]byte, len(m))
	for i := range len(m) {
		b[i] = byte(strings.IndexByte(fuzzAlphabet, m[i]))
	}
	return string(b)
}

// fuzzEncodings are the spellings of an echo: in one step, then twice. The
// seeds of testdata/fuzz/FuzzRedaction name the first ones by their index.
var fuzzEncodings = append(append([]echotest.Encoding(nil), echotest.Encodings...), echotest.Twice...)

// fuzzEncoding is the index of the encoding of that name, for seeds.
func fuzzEncoding(name string) uint8 {
	for i, e := range fuzzEncodings {
		if e.Name == name {
			return uint8(i)
		}
	}
	panic("no encoding " + name)
}

// fuzzOutputs makes the Client meet text in every outside field of the
// answers to the calls that carry creds[which] (each redactor is bound to
// the credentials of its attempt), and returns what it left where anyone
// could read it.
func fuzzOutputs(t *testing.T, creds []string, which int, text string) []string {
	header := func(h http.Header) {
		for _, name := range []string{"X-Echo", "Warning", "X-Request-Id", "Deprecation", "Sunset"} {
			h.Set(name, text)
		}
		h.Set("Location", "/elsewhere/"+url.PathEscape(text)+"?q="+url.QueryEscape(text))
	}
	jsonText, _ := json.Marshal(text)
	answer := func(r *http.Request, status int, contentType, body string) *http.Response {
		h := http.Header{}
		header(h)
		h.Set("Content-Type", contentType+"; x="+text)
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}
	}
	tokenAnswer := func(r *http.Request) *http.Response {
		return answerJSON(r, 200, `{"access_token":"`+creds[3]+`","token_type":"Bearer","expires_in":600}`)
	}
	routes := map[string]func(*http.Request) (*http.Response, error){
		"/users/reason": func(r *http.Request) (*http.Response, error) {
			return answer(r, 400, "application/json", `{"reason":`+string(jsonText)+`,"error_message":`+string(jsonText)+`}`), nil
		},
		"/users/body": func(r *http.Request) (*http.Response, error) {
			return answer(r, 503, "text/plain", text), nil
		},
		"/users/cut": func(r *http.Request) (*http.Response, error) {
			return answer(r, 400, "text/plain", strings.Repeat("x", maxErrorBody-min(len(text), maxErrorBody)/2)+text), nil
		},
		"/users/decode": func(r *http.Request) (*http.Response, error) {
			return answer(r, 200, "text/plain", strings.Repeat("y", maxDecodeErrorBody-min(len(text), maxDecodeErrorBody)/2)+text), nil
		},
		"/users/redirect": func(r *http.Request) (*http.Response, error) { return answer(r, 302, "text/plain", ""), nil },
		"/users/transport": func(r *http.Request) (*http.Response, error) {
			return nil, errors.New("proxy says " + text)
		},
		"/authenticate": func(r *http.Request) (*http.Response, error) {
			return answer(r, 400, "application/json", `{"reason":`+string(jsonText)+`,"error_message":`+string(jsonText)+`}`), nil
		},
	}
	var outs []string
	logs := &logBuffer{}
	obs := &Observer{OperationDone: func(_ context.Context, _ Operation, r OperationResult) {
		if r.Err != nil {
			outs = append(outs, r.Err.Error())
		}
	}}
	client := func(token func(*http.Request) *http.Response) *Client {
		c, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: fuzzID, ClientSecret: creds[0], MaxRetries: -1, Observer: obs,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				p := strings.TrimPrefix(r.URL.Path, defaultPathPrefix)
				if p == "/auth/token" {
					return token(r), nil
				}
				return routes[p](r)
			})}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var errs []error
	c := client(tokenAnswer)
	if which < 5 { // the client credentials and the management token
		for _, id := range []string{"reason", "body", "cut", "decode", "redirect", "transport"} {
			_, err := c.Users.Get(context.Background(), id)
			errs = append(errs, err)
		}
	}
	_, err := c.Authenticate(context.Background(), creds[6]) // every credential
	errs = append(errs, err)
	for _, token := range []func(*http.Request) *http.Response{
		func(r *http.Request) *http.Response {
			return answer(r, 401, "application/json", `{"error":`+string(jsonText)+`,"error_description":`+string(jsonText)+`}`)
		},
		func(r *http.Request) *http.Response { return answer(r, 200, "text/html", "<html>"+text+"</html>") },
		func(r *http.Request) *http.Response { return answer(r, 502, "text/html", text) },
	} {
		if which >= 3 { // the token request carries the client credentials only
			break
		}
		_, err := client(token).Users.Get(context.Background(), "reason")
		errs = append(errs, err)
	}
	for _, err := range errs {
		if err == nil {
			t.Fatal("a call succeeded; want every one to fail")
		}
		run := &xechoRun{err: err, logs: &logBuffer{}}
		outs = append(outs, run.texts()...)
	}
	return append(outs, logs.String())
}
