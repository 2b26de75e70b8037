package management

import (
	"encoding/hex"
	"encoding/json"
	"maps"
	"reflect"
	"strconv"

	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/google/go-cmp/cmp"
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
	var logs logBuffer // a token fetch logs on its own goroutine
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, mt := setup(t, Config{Logger: logger, MaxRetries: 2})
	answers := httpmock.NewStringResponder(503, "").Once().
		Then(jsonResponder(401, map[string]any{"reason": ReasonUnauthorized, "error_message": ""})).
		Then(jsonResponder(400, map[string]any{"reason": ReasonRequestValidation, "error_message": "Invalid page"}))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testQuery(t, r, "page=page-token-xyz")
		return answers(r)
	})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/things", func(r *http.Request) (*http.Response, error) {
		testQuery(t, r, "page=page-token-xyz")
		return nil, errors.New("connection refused")
	})

	var errs []error
	_, err := c.Users.ListPage(context.Background(), &ListOptions{NextPage: defaultPathPrefix + "/users?page=page-token-xyz"})
	errs = append(errs, err)
	_, err = c.Things.ListPage(context.Background(), &ListOptions{NextPage: defaultPathPrefix + "/things?page=page-token-xyz"})
	errs = append(errs, err)

	bad, badMT := setup(t, Config{Logger: logger})
	badMT.RegisterResponder(http.MethodPost, tokenURL, jsonResponder(401, map[string]any{"error": "invalid_client", "error_description": "Bad client"}))
	_, err = bad.Users.ListPage(context.Background(), nil)
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

func TestConfigShowsEffectiveValues(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		str      string
		logValue map[string]any // also MarshalJSON's, durations aside
	}{
		{
			name: "defaults",
			cfg:  Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret},
			str: `management.Config{BaseURL:"https://api.example.test", ClientID:REDACTED, ClientSecret:REDACTED, TokenSource:false, ` +
				`MaxRetries:4, RetryWaitMin:250ms, RetryWaitMax:15s, RefreshMargin:lifetime/10, ` +
				`PathPrefix:"/v2/api/management/service_connect", UnsetMarker:"$ServiceUnset$", AllowInsecureHTTP:false, MaxResponseBytes:33554432, SharedStore:false, SharedStoreTimeout:200ms}`,
			logValue: map[string]any{
				"base_url": mockBaseURL, "client_id": "REDACTED", "client_secret": "REDACTED", "token_source": false,
				"max_retries": 4.0, "retry_wait_min": "250ms", "retry_wait_max": "15s", "refresh_margin": "lifetime/10",
				"path_prefix": defaultPathPrefix, "unset_marker": defaultUnsetMarker, "allow_insecure_http": false,
				"max_response_bytes": float64(defaultMaxResponseBytes), "shared_store": false, "shared_store_timeout": "200ms",
			},
		},
		{
			name: "never retry, no margin",
			cfg: Config{BaseURL: "http://10.0.0.1", TokenSource: staticSource("t"), MaxRetries: -1, RefreshMargin: -1,
				RetryWaitMin: time.Second, RetryWaitMax: time.Minute, PathPrefix: "/api", UnsetMarker: "!unset",
				AllowInsecureHTTP: true, MaxResponseBytes: 1024},
			str: `management.Config{BaseURL:"http://10.0.0.1", ClientID:"", ClientSecret:"", TokenSource:true, ` +
				`MaxRetries:0, RetryWaitMin:1s, RetryWaitMax:1m0s, RefreshMargin:0s, ` +
				`PathPrefix:"/api", UnsetMarker:"!unset", AllowInsecureHTTP:true, MaxResponseBytes:1024, SharedStore:false, SharedStoreTimeout:200ms}`,
			logValue: map[string]any{
				"base_url": "http://10.0.0.1", "client_id": `""`, "client_secret": `""`, "token_source": true,
				"max_retries": 0.0, "retry_wait_min": "1s", "retry_wait_max": "1m0s", "refresh_margin": "0s",
				"path_prefix": "/api", "unset_marker": "!unset", "allow_insecure_http": true, "max_response_bytes": 1024.0, "shared_store": false, "shared_store_timeout": "200ms",
			},
		},
		{
			name: "margin set",
			cfg:  Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: 7, RefreshMargin: 90 * time.Second},
			str: `management.Config{BaseURL:"https://api.example.test", ClientID:REDACTED, ClientSecret:REDACTED, TokenSource:false, ` +
				`MaxRetries:7, RetryWaitMin:250ms, RetryWaitMax:15s, RefreshMargin:1m30s, ` +
				`PathPrefix:"/v2/api/management/service_connect", UnsetMarker:"$ServiceUnset$", AllowInsecureHTTP:false, MaxResponseBytes:33554432, SharedStore:false, SharedStoreTimeout:200ms}`,
			logValue: map[string]any{
				"base_url": mockBaseURL, "client_id": "REDACTED", "client_secret": "REDACTED", "token_source": false,
				"max_retries": 7.0, "retry_wait_min": "250ms", "retry_wait_max": "15s", "refresh_margin": "1m30s",
				"path_prefix": defaultPathPrefix, "unset_marker": defaultUnsetMarker, "allow_insecure_http": false,
				"max_response_bytes": float64(defaultMaxResponseBytes), "shared_store": false, "shared_store_timeout": "200ms",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.str, tt.cfg.String()); diff != "" {
				t.Errorf("String (-want +got):\n%s", diff)
			}
			raw, err := json.Marshal(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.logValue, got); diff != "" {
				t.Errorf("MarshalJSON (-want +got):\n%s", diff)
			}
			// LogValue: the same values, durations in nanoseconds under the JSON handler.
			var logs bytes.Buffer
			slog.New(slog.NewJSONHandler(&logs, nil)).Info("m", "cfg", tt.cfg)
			var rec struct{ Cfg map[string]any }
			if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			want := maps.Clone(tt.logValue)
			for _, k := range []string{"retry_wait_min", "retry_wait_max", "shared_store_timeout"} {
				d, _ := time.ParseDuration(want[k].(string))
				want[k] = float64(d)
			}
			if diff := cmp.Diff(want, rec.Cfg); diff != "" {
				t.Errorf("LogValue (-want +got):\n%s", diff)
			}
		})
	}
}

// A Client logs as its base URL under slog's JSON handler too, which
// would otherwise print its exported fields.
func TestClientLogValue(t *testing.T) {
	c, _ := setup(t)
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("m", "client", c)
	if want := `"client":{"base_url":"https://api.example.test"}`; !strings.Contains(logs.String(), want) {
		t.Errorf("log %s; want it to hold %s", logs.String(), want)
	}
}
