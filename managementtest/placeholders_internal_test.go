package managementtest

import "testing"

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
