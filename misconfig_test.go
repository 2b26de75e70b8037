package management

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestNewClientRefusesBaseURLWithThePrefix(t *testing.T) {
	tests := []struct {
		base, prefix, want string
	}{
		{"https://api.example.com/v2/api/management/service_connect", "", "https://api.example.com"},
		{"https://api.example.com/v2/api/management/service_connect/", "", "https://api.example.com"},
		{"https://gw.example.com:8443/tenant-7/v2/api/management/service_connect", "", "https://gw.example.com:8443/tenant-7"},
		{"https://gw.example.com/tenant-7/v3/mgmt", "/v3/mgmt/", "https://gw.example.com/tenant-7"},
	}
	for _, tt := range tests {
		_, err := NewClient(Config{BaseURL: tt.base, PathPrefix: tt.prefix, ClientID: "id", ClientSecret: "secret"})
		prefix := strings.TrimSuffix(tt.prefix, "/")
		if prefix == "" {
			prefix = defaultPathPrefix
		}
		want := fmt.Sprintf("management: invalid argument: Config.BaseURL %q already ends with the path prefix %q, which the client adds to every path; write BaseURL as %q",
			strings.TrimSuffix(tt.base, "/"), prefix, tt.want)
		if !errors.Is(err, ErrInvalidArgument) || err.Error() != want {
			t.Errorf("NewClient(%q, %q) = %v; want %q", tt.base, tt.prefix, err, want)
		}
	}
	for _, base := range []string{"https://api.example.com/v2", "https://api.example.com/service_connect", "https://api.example.com/x/v2/api/management/service_connect/more"} {
		if _, err := NewClient(Config{BaseURL: base, ClientID: "id", ClientSecret: "secret"}); err != nil {
			t.Errorf("NewClient(%q) = %v; want a client", base, err)
		}
	}
}

func TestNewClientRefusesClientIDWithColon(t *testing.T) {
	_, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: "tenant:app-7", ClientSecret: mockSecret})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "Config.ClientID contains ':'") {
		t.Fatalf("err = %v; want ErrInvalidArgument about ':' in Config.ClientID", err)
	}
	if strings.Contains(err.Error(), "tenant") || strings.Contains(err.Error(), mockSecret) {
		t.Errorf("err = %q quotes the credentials", err)
	}
	// A colon in the secret is fine (RFC 7617), and the id is unused with a TokenSource.
	for _, cfg := range []Config{
		{BaseURL: mockBaseURL, ClientID: "app-7", ClientSecret: "a:b"},
		{BaseURL: mockBaseURL, ClientID: "tenant:app-7", TokenSource: staticSource("t")},
	} {
		if _, err := NewClient(cfg); err != nil {
			t.Errorf("NewClient = %v; want a client", err)
		}
	}
}
