package management

import (
	"encoding/hex"
	"reflect"
	"strconv"

	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

// secretsOf lists what must never be printed or logged by a client with mock credentials.
func secretsOf(extra ...string) []string {
	return append([]string{
		mockSecret,
		mockToken,
		base64.StdEncoding.EncodeToString([]byte(mockID + ":" + mockSecret)),
		"page-token-xyz", // a query string value
	}, extra...)
}

func assertNoSecrets(t *testing.T, where, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s contains %q:\n%s", where, s, text)
		}
	}
}

func TestNothingSecretInLogsOrErrors(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, mt := newMockClient(t, Config{Logger: logger, MaxRetries: 2})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users",
		httpmock.NewStringResponder(503, "").Once().
			Then(jsonResponder(401, map[string]any{"reason": ReasonUnauthorized, "error_message": ""})).
			Then(jsonResponder(400, map[string]any{"reason": ReasonRequestValidation, "error_message": "Invalid page"})))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/things", httpmock.NewErrorResponder(errors.New("connection refused")))

	var errs []error
	_, err := c.do(context.Background(), &operation{method: "GET", link: defaultPathPrefix + "/users?page=page-token-xyz"}, &map[string]any{})
	errs = append(errs, err)
	_, _, err = getRaw(context.Background(), c, "/things", "page=page-token-xyz")
	errs = append(errs, err)

	bad, badMT := newMockClient(t, Config{Logger: logger})
	badMT.RegisterResponder(http.MethodPost, tokenURL, jsonResponder(401, map[string]any{"error": "invalid_client", "error_description": "Bad client"}))
	_, _, err = getRaw(context.Background(), bad, "/users", "")
	errs = append(errs, err)

	for i, err := range errs {
		if err == nil {
			t.Fatalf("call %d succeeded; the test needs failures", i)
		}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			assertNoSecrets(t, fmt.Sprintf("error %d with %s", i, verb), fmt.Sprintf(verb, err), secretsOf())
		}
	}
	if !strings.Contains(logs.String(), `"path":"/users"`) || !strings.Contains(logs.String(), `"msg":"management: retrying"`) {
		t.Errorf("logs lack the request records:\n%s", logs.String())
	}
	assertNoSecrets(t, "logs", logs.String(), secretsOf("https://"))
}

func TestConfigAndTokenRedacted(t *testing.T) {
	cfg := Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret}
	tok := &Token{AccessToken: mockToken, TokenType: "Bearer", Expiry: time.Now()}
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	logger.Info("config", "cfg", cfg, "ptr", &cfg, "token", tok, "tokval", *tok)
	logger.Info("nested", "v", struct {
		C Config
		T *Token
	}{cfg, tok})

	var printed []string
	for _, v := range []any{cfg, &cfg, tok, *tok, struct{ C Config }{cfg}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			printed = append(printed, fmt.Sprintf(verb, v))
		}
	}
	all := strings.Join(printed, "\n") + logs.String()
	assertNoSecrets(t, "printed values", all, []string{mockSecret, mockToken, mockID})
	if !strings.Contains(all, mockBaseURL) || !strings.Contains(all, "REDACTED") {
		t.Errorf("printed values lack the base URL or the redaction mark:\n%s", all)
	}
}

// vaultSource is a TokenSource that holds a credential in a field, as a
// user's source may: printing the Client's wrapper of it must not show it.
type vaultSource struct{ Key string }

func (v vaultSource) Token(context.Context) (*Token, error) { return &Token{AccessToken: v.Key}, nil }

// encodings lists s and its hex and base64 encodings.
func encodings(s ...string) []string {
	var all []string
	for _, v := range s {
		b := []byte(v)
		all = append(all, v, hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
			base64.StdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b))
	}
	return all
}

// allFormats lists a format for every verb with every flag, with and
// without width and precision.
func allFormats() []string {
	var formats []string
	for _, verb := range "vsqdtxXobeEfFgGcUp" {
		for _, flags := range []string{"", "+", "#", "-", " ", "0", "+#", "# 0"} {
			for _, size := range []string{"", "40", ".3", "60.50"} {
				formats = append(formats, "%"+flags+size+string(verb))
			}
		}
	}
	return formats
}

func TestEveryVerbRedacts(t *testing.T) {
	const vaultKey = "vault-key-never-printed"
	cfg := Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret}
	tok := &Token{AccessToken: mockToken, TokenType: "Bearer", Expiry: time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)}
	c, _ := setup(t)
	cache := c.tokens.(*tokenCache)
	if _, err := cache.Token(context.Background()); err != nil {
		t.Fatal(err) // the cache now holds mockToken too
	}
	withSource, _ := setup(t, Config{TokenSource: vaultSource{Key: vaultKey}})
	values := map[string]any{
		"Config": cfg, "*Config": &cfg, "Token": *tok, "*Token": tok,
		"*Client": c, "*tokenCache": cache, "checkedSource": withSource.tokens,
		"tokenResponse": tokenResponse{AccessToken: mockToken, TokenType: "Bearer", ExpiresIn: 600},
		"[]Token":       []Token{*tok}, "map of Config": map[string]Config{"k": cfg},
		"struct": struct {
			C Config
			T *Token
		}{cfg, tok},
	}
	secrets := encodings(mockSecret, mockToken, mockID, vaultKey,
		base64.StdEncoding.EncodeToString([]byte(mockID+":"+mockSecret)))
	for name, v := range values {
		for _, format := range allFormats() {
			if strings.HasSuffix(format, "p") && reflect.ValueOf(v).Kind() == reflect.Struct {
				// fmt prints a struct under %p field by field, calling no
				// method (a misuse go vet reports): nothing can redact it.
				continue
			}
			assertNoSecrets(t, name+" formatted with "+format, fmt.Sprintf(format, v), secrets)
		}
	}
	// Every verb but %p writes the redacted description, %q quoted.
	for _, format := range allFormats() {
		want := cfg.String()
		switch format[len(format)-1] {
		case 'p':
			continue
		case 'q':
			want = strconv.Quote(want)
		}
		if got := fmt.Sprintf(format, cfg); got != want {
			t.Errorf("Config formatted with %s = %q, want %q", format, got, want)
		}
	}
}
