package managementtest

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/serviceconnect/management/internal/redact"
	"github.com/serviceconnect/management/internal/redact/echotest"
)

func TestIsPlaceholder(t *testing.T) {
	for v, want := range map[string]bool{
		"{{management_token_1}}":    true,
		"{{end_user_token_12}}":     true,
		"{{client_secret_1}}":       true,
		"{{client_credentials_3}}":  true,
		"{{management_token_}}":     false,
		"{{management_token_x}}":    false,
		"{{abc}}":                   false,
		"{{redacted}}":              false,
		"management_token_1":        false,
		"{{management_token_1}}abc": false,
	} {
		if got := isPlaceholder(v); got != want {
			t.Errorf("isPlaceholder(%q) = %t, want %t", v, got, want)
		}
	}
	// A token that merely looks like one is learnt, and replaced.
	var c credentials
	if p := c.learn("{{abc}}", kindManagementToken); p != "{{management_token_1}}" {
		t.Errorf("the token {{abc}} got the placeholder %q", p)
	}
}

// The last check before a cassette is written knows every credential
// learnt, whatever the shape it came in, in every spelling; it takes no
// placeholder for an echo, even of a short credential that is a word of
// one.
func TestLeakCheckKnowsEveryCredential(t *testing.T) {
	var c credentials
	c.learnAuthorization("Basic "+base64.StdEncoding.EncodeToString([]byte("client-1:basic-secret-1")), true)
	c.learnTokenAnswer(`{"access_token":"access-tok-1","refresh_token":"refresh-tok-1","id_token":"id-tok-1"}`)
	c.learnTokenAnswer("access_token=form-access-1&refresh_token=form-refresh-1")
	c.learnTokenAnswer(`{"access_token":"cut-access-1`)
	c.learnRequestBody("grant_type=client_credentials&client_id=x&client_secret=form-secret-1", RouteToken)
	c.learnRequestBody(`{"client_secret":"json-secret-1"}`, RouteToken)
	c.learnRequestBody(`{"access_token":"bEaReR eu-tok-1"}`, RouteAuthenticate)
	c.learnAuthorization("BEARER header-tok-1", false)
	c.learnRequestBody(`{"client_secret":"secret"}`, RouteToken)
	encodings := append(append([]echotest.Encoding(nil), echotest.Encodings...), echotest.Twice...)
	for _, v := range []string{"basic-secret-1", "client-1:basic-secret-1", "access-tok-1", "refresh-tok-1", "id-tok-1", "form-access-1",
		"form-refresh-1", "cut-access-1", "form-secret-1", "json-secret-1", "eu-tok-1", "header-tok-1", "secret"} {
		for _, enc := range encodings {
			if len(v) < redact.MinLen && (enc.Name == echotest.Base64Line(1).Name || enc.Name == echotest.Base64Line(2).Name) {
				// Below MinLen, the engine finds base64 at the first
				// alignment only (redact's spellings): the few characters
				// of a middle would be found in too many texts.
				continue
			}
			if text := "seen: " + enc.Encode(v) + "."; !c.leaked(text) {
				t.Errorf("the leak check misses %q (%s of %q)", text, enc.Name, v)
			}
		}
	}
	var all []string
	for _, cr := range c.list {
		all = append(all, cr.placeholder)
	}
	if text := strings.Join(all, ", ") + " {{redacted}} {{client_id_1}}"; c.leaked(text) {
		t.Errorf("the leak check takes the placeholders %s for an echo", text)
	}
}

// A run of text is named by the credential it spells, also in rarer
// escapes, and two credentials side by side each by their own.
func TestReplaceNamesEachCredential(t *testing.T) {
	var c credentials
	a := c.learn("token-aaaa-1111", kindEndUserToken)
	b := c.learn("token-bbbb-2222", kindEndUserToken)
	for text, want := range map[string]string{
		"x token-aaaa-1111 y":                                        "x " + a + " y",
		"token-aaaa-1111token-bbbb-2222":                             a + b,
		echotest.References("token-bbbb-2222", "&#%d;") + "!":        b + "!",
		"%2574oken-aaaa-1111":                                        a,
		base64.StdEncoding.EncodeToString([]byte("token-bbbb-2222")): b,
	} {
		if got := c.replace(text, false); got != want {
			t.Errorf("replace(%q) = %q, want %q", text, got, want)
		}
	}
	if got, want := c.replace("cut: token-aaaa-11", true), "cut: "+a; got != want {
		t.Errorf("replace of a cut text = %q, want %q", got, want)
	}
}

// A replay learns as it goes: each text is searched for every credential
// learnt so far, however the engines were grouped.
func TestReplaceAfterEachLearn(t *testing.T) {
	var c credentials
	var tokens, placeholders []string
	for i := range 40 {
		tok := fmt.Sprintf("eu-token-%03d-x", i)
		tokens = append(tokens, tok)
		placeholders = append(placeholders, c.learn(tok, kindEndUserToken, "Bearer "+tok))
		for j, old := range tokens {
			if got := c.replace("["+old+"]", false); got != "["+placeholders[j]+"]" {
				t.Fatalf("after %d tokens, replace of token %d = %q, want its placeholder %s", i+1, j+1, got, placeholders[j])
			}
		}
	}
	if n := len(c.engines()); n > 6 {
		t.Errorf("%d engines for 40 credentials; want at most about log2 of their forms", n)
	}
}
