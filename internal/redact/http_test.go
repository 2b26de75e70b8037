package redact

import (
	"slices"
	"strings"
	"testing"
)

// Spans are what Text replaces: putting Marker in each gives Text's result,
// in every encoding of an echo, and cut texts too.
func TestSpansAreWhatTextReplaces(t *testing.T) {
	r := New(token, "qzx7k")
	for _, enc := range encodings {
		for _, text := range []string{
			"a " + enc.Encode(token) + " b " + enc.Encode("qzx7k") + " c",
			enc.Encode(token) + enc.Encode(token),
			"nothing",
			"cut " + enc.Encode(token)[:len(enc.Encode(token))/2],
		} {
			for _, cut := range []bool{false, true} {
				spans := r.Spans(text, cut)
				var b strings.Builder
				at := 0
				for i, s := range spans {
					if s.Start < at || s.End <= s.Start || (i > 0 && s.Start == at) {
						t.Fatalf("%s: Spans(%q, %t) = %v: not in order, disjoint and apart", enc.Name, text, cut, spans)
					}
					b.WriteString(text[at:s.Start] + Marker)
					at = s.End
				}
				b.WriteString(text[at:])
				want, _ := r.Redact(text, cut)
				if b.String() != want {
					t.Errorf("%s: Spans(%q, %t) = %v gives %q; Redact gives %q", enc.Name, text, cut, spans, b.String(), want)
				}
			}
		}
	}
	if got := New().Spans("anything", false); got != nil {
		t.Errorf("a Redactor of nothing found %v", got)
	}
}

func TestAuthForms(t *testing.T) {
	for h, want := range map[string][]string{
		"Bearer tok-1":       {"Bearer tok-1", "tok-1"},
		"Basic aWQ6c2VjcmV0": {"Basic aWQ6c2VjcmV0", "aWQ6c2VjcmV0"},
		"bare":               {"bare"},
	} {
		if got := AuthForms(h); !slices.Equal(got, want) {
			t.Errorf("AuthForms(%q) = %q, want %q", h, got, want)
		}
	}
}

func TestCredentialHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Set-Cookie": true, "Authorization": true, "X-Api-Key": true, "X-Session-Id": true,
		"X-Amz-Signature": true, "Proxy-Authenticate": true, "X-Csrf-Token": true,
		"Content-Type": false, "Retry-After": false, "X-Request-Id": false, "Location": false,
	} {
		if got := CredentialHeader(name); got != want {
			t.Errorf("CredentialHeader(%q) = %t, want %t", name, got, want)
		}
	}
}
