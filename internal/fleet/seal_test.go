package fleet

import (
	"bytes"
	"strings"
	"testing"
)

func newTestSealer(t *testing.T, secret, baseURL, clientID string) *Sealer {
	t.Helper()
	s, err := NewSealer([]byte(secret), baseURL, "/v1", clientID)
	if err != nil {
		t.Fatalf("NewSealer: %v", err)
	}
	return s
}

func TestSealOpen(t *testing.T) {
	s := newTestSealer(t, "secret-1", "https://a.example", "client-1")
	key := s.ManagementTokenKey()
	sealed := s.Seal(key, []byte("the token"))
	if bytes.Contains(sealed, []byte("the token")) {
		t.Fatal("the sealed value holds the plaintext")
	}
	if got, ok := s.Open(key, sealed); !ok || string(got) != "the token" {
		t.Fatalf("open = %q, %v; want the plaintext", got, ok)
	}
	if bytes.Equal(sealed, s.Seal(key, []byte("the token"))) {
		t.Error("two seals of one plaintext are equal: the nonce is not fresh")
	}
}

func TestOpenRefuses(t *testing.T) {
	s := newTestSealer(t, "secret-1", "https://a.example", "client-1")
	key := s.ManagementTokenKey()
	sealed := s.Seal(key, []byte("the token"))
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	rotated := newTestSealer(t, "secret-2", "https://a.example", "client-1")
	cases := map[string]struct {
		s     *Sealer
		key   string
		value []byte
	}{
		"another storage key":       {s, s.VerdictStem("Bearer x"), sealed},
		"a flipped bit":             {s, key, flipped},
		"a rotated secret":          {rotated, key, sealed},
		"truncated":                 {s, key, sealed[:10]},
		"empty":                     {s, key, nil},
		"plaintext written by hand": {s, key, []byte(`{"access_token":"forged","token_type":"Bearer"}`)},
	}
	for name, c := range cases {
		if got, ok := c.s.Open(c.key, c.value); ok {
			t.Errorf("%s: open = %q, true; want refused", name, got)
		}
	}
}

func TestStorageKeysNeverHoldIdentifiersOrTokens(t *testing.T) {
	a := newTestSealer(t, "secret-1", "https://a.example", "client-1")
	keys := []string{a.ManagementTokenKey(), a.ManagementTokenLeaseKey(), a.VerdictStem("Bearer eu-token-1")}
	for _, k := range keys {
		for _, bad := range []string{"client-1", "eu-token-1", "secret-1", "a.example"} {
			if strings.Contains(k, bad) {
				t.Errorf("storage key %q holds %q", k, bad)
			}
		}
	}
	for name, other := range map[string]*Sealer{
		"another base URL": newTestSealer(t, "secret-1", "https://b.example", "client-1"),
		"another client":   newTestSealer(t, "secret-1", "https://a.example", "client-2"),
	} {
		if other.ManagementTokenKey() == a.ManagementTokenKey() || other.VerdictStem("Bearer eu-token-1") == a.VerdictStem("Bearer eu-token-1") {
			t.Errorf("%s shares storage keys", name)
		}
	}
	if a.VerdictStem("Bearer 1") == a.VerdictStem("Bearer 2") {
		t.Error("two tokens share a verdict key")
	}
}

// hashTag is the part of key a Redis Cluster hashes: the first {...} with
// something inside, or the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// Each value shares a hash slot with its lease (a verdict with its epoch
// too), so that on a Redis Cluster they are up or down together; verdicts
// of different tokens are tagged apart, so that they spread over the
// cluster. Every key starts with the layout's version.
func TestKeyLayout(t *testing.T) {
	s := newTestSealer(t, "secret-1", "https://a.example", "client-1")
	stem, other := s.VerdictStem("Bearer eu-1"), s.VerdictStem("Bearer eu-2")
	slot := s.VerdictSlot("Bearer eu-1")
	groups := [][]string{
		{s.ManagementTokenKey(), s.ManagementTokenLeaseKey()},
		{stem + ":epoch", slot, slot + ":lease", slot + ":eAAAAAAAAAAAAAAAA", s.VerdictSlot("bearer eu-1") + ":lease"},
	}
	for _, keys := range groups {
		for _, k := range keys {
			if !strings.HasPrefix(k, "mg1:") {
				t.Errorf("key %q without the layout version mg1:", k)
			}
			if hashTag(k) == k || hashTag(k) != hashTag(keys[0]) {
				t.Errorf("key %q hashes on %q; want the tag of %q", k, hashTag(k), keys[0])
			}
		}
	}
	if hashTag(stem) == hashTag(other) || hashTag(stem) == hashTag(s.ManagementTokenKey()) {
		t.Errorf("verdicts tagged %q and %q, the token %q; want each its own", hashTag(stem), hashTag(other), hashTag(s.ManagementTokenKey()))
	}
	if s.LegacyVerdictKey("Bearer eu-1") == stem {
		t.Error("the legacy verdict key is the new one")
	}
	// The layout before spellings: its epoch is this one's for a scheme
	// in lower case, and its verdicts are never read as this one's.
	if s.UnfoldedVerdictStem("bearer eu-1") != stem || s.UnfoldedVerdictStem("Bearer eu-1") == stem {
		t.Error("the stem before spellings is not the lower-case spelling's stem, and only its")
	}
	if strings.HasPrefix(s.UnfoldedVerdictStem("Bearer eu-1"), slot) || slot == stem {
		t.Error("a verdict of the layout before spellings shares a slot with this one's")
	}
}

// One credential has one stem whatever the ASCII case of its scheme, and
// each spelling its own slot; other bytes, Unicode letters that fold to
// ASCII ones included, make another credential.
func TestSpellings(t *testing.T) {
	s := newTestSealer(t, "secret-1", "https://a.example", "client-1")
	spellings := []string{"bearer T", "Bearer T", "BEARER T", "bEaReR T", "Bearer T"}
	slots := map[string]bool{}
	for _, h := range spellings {
		if s.VerdictStem(h) != s.VerdictStem("bearer T") {
			t.Errorf("%q has a stem of its own", h)
		}
		slots[s.VerdictSlot(h)] = true
		if Fold(h) != "bearer T" {
			t.Errorf("Fold(%q) = %q; want %q", h, Fold(h), "bearer T")
		}
	}
	if len(slots) != 4 {
		t.Errorf("%d slots for 4 spellings; want one each", len(slots))
	}
	for _, h := range []string{"Bearer t", "Bearer  T", "Bear\u212Aer T", "\u212Aey T", "Beare\u0280 T"} {
		if s.VerdictStem(h) == s.VerdictStem("bearer T") {
			t.Errorf("%q shares the stem of %q", h, "Bearer T")
		}
	}
	if Spelling("bearer T") != 0 || Spelling("Bearer T") != 1 || Spelling("Bearer") != 1 {
		t.Errorf("spellings %d, %d, %d; want 0, 1, 1", Spelling("bearer T"), Spelling("Bearer T"), Spelling("Bearer"))
	}
	long := strings.Repeat("a", 70)
	seen := map[uint64]string{}
	for _, scheme := range []string{"bb", "Bb", "bB", "BB"} { // one credential, four spellings
		h := long + scheme + " T"
		if other, dup := seen[Spelling(h)]; dup {
			t.Errorf("schemes of more than 64 bytes: %q and %q spelled alike", other, h)
		}
		seen[Spelling(h)] = h
	}
}
