package fleet

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
)

// Sealer derives the keys of one Client's entries in a SharedStore and seals
// their values, so that whoever can read or write the store can neither use
// a stored token nor forge a verdict:
//   - every storage key holds a namespace hashed from the base URL,
//     the path prefix and the client id (never the id itself), so services
//     sharing one store never share entries;
//   - values are sealed with AES-256-GCM under a key derived (HKDF-SHA256)
//     from the master secret, with the storage key as associated data, so a
//     value copied under another key does not open;
//   - a verdict's storage key is an HMAC of the End User's Authorization
//     header under another derived key, so the store never sees a token;
//   - every sealed value starts with a key id derived from the master
//     secret: after the secret is rotated, old entries read as absent.
//
// The master secret is the client secret, or Config.SharedStoreKey.
type Sealer struct {
	namespace string
	keyID     [4]byte
	aead      cipher.AEAD
	macKey    []byte
}

// sealVersion is the first byte of every sealed value.
const sealVersion = 1

// NewSealer returns the Sealer of a Client: master is its client secret
// or Config.SharedStoreKey; baseURL, prefix and clientID name its
// namespace.
func NewSealer(master []byte, baseURL, prefix, clientID string) (*Sealer, error) {
	derive := func(info string, n int) ([]byte, error) {
		return hkdf.Key(sha256.New, master, nil, "management-go/shared-store/"+info, n)
	}
	encKey, err := derive("seal", 32)
	if err != nil {
		return nil, err
	}
	macKey, err := derive("verdict-key", 32)
	if err != nil {
		return nil, err
	}
	id, err := derive("key-id", 4)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	ns := sha256.Sum256([]byte("management-go/v1\x00" + baseURL + "\x00" + prefix + "\x00" + clientID))
	s := &Sealer{namespace: hex.EncodeToString(ns[:12]), aead: aead, macKey: macKey}
	copy(s.keyID[:], id)
	return s, nil
}

// The key layout, version 1 (keys start with "mg1:"). Each value shares a
// Redis Cluster hash slot with its lease (and a verdict with its epoch) by a
// hash tag, the part in braces, so that a value and its lease are up or
// down together: a replica never waits on a lease whose holder cannot store
// the value. The fleet's token is tagged with the namespace; each verdict
// with its own HMAC, so that verdicts spread over the cluster.
//
//	mg1:{<ns>}:token              the management token
//	mg1:{<ns>}:token:lease        the lease on refreshing it
//	mg1:<ns>:verdict:{<mac>}:epoch  an End User credential's epoch, set by Forget (see the root's sharedverdicts.go)
//	mg1:<ns>:verdict:{<mac>}:s<spelling>[:e<epoch>]  the verdict on one spelling, under the epoch read before asking
//	mg1:<ns>:verdict:{<mac>}:s<spelling>[:e<epoch>]:lease  the lease on asking about it
//
// <mac> is an HMAC of the Authorization value with its scheme in ASCII
// lower case, so that one epoch holds for every spelling of the scheme
// (RFC 9110, 11.1: the scheme is case-insensitive); <spelling> tells the
// spellings apart (see Spelling), as the service answers each. The layout
// before spellings keyed everything by an HMAC of the value as received,
// with no :s part (UnfoldedVerdictStem); before hash tags, without braces
// (LegacyVerdictKey).

// ManagementTokenKey is the storage key of the fleet's management token.
func (s *Sealer) ManagementTokenKey() string { return "mg1:{" + s.namespace + "}:token" }

// ManagementTokenLeaseKey is the storage key of the lease on refreshing it.
func (s *Sealer) ManagementTokenLeaseKey() string { return s.ManagementTokenKey() + ":lease" }

// VerdictStem is the stem of the storage keys of the entries on the
// credential of an Authorization header value, whatever the spelling of
// its scheme: its epoch's (stem + ":epoch"), and its verdicts' (see
// VerdictSlot).
func (s *Sealer) VerdictStem(authorization string) string {
	return "mg1:" + s.namespace + ":verdict:{" + s.mac(Fold(authorization)) + "}"
}

// VerdictSlot is the storage key of the verdict on authorization, as
// spelled, when no epoch was set, and the stem of its lease's and its
// epoch-bound verdicts' keys.
func (s *Sealer) VerdictSlot(authorization string) string {
	return s.VerdictStem(authorization) + ":s" + strconv.FormatUint(Spelling(authorization), 16)
}

// UnfoldedVerdictStem is the stem the layout before spellings gave the
// entries on authorization as received (its verdict, and its epoch at
// stem + ":epoch"), which Forget still sets and deletes so that replicas
// not yet upgraded during a rolling deploy stop accepting a forgotten
// token. For a scheme in lower case it is VerdictStem: the epochs are one.
func (s *Sealer) UnfoldedVerdictStem(authorization string) string {
	return "mg1:" + s.namespace + ":verdict:{" + s.mac(authorization) + "}"
}

// LegacyVerdictKey is the key the layout before hash tags gave the verdict on
// authorization, which Forget still deletes so that replicas not yet
// upgraded during a rolling deploy stop accepting a forgotten token.
func (s *Sealer) LegacyVerdictKey(authorization string) string {
	return "mg1:" + s.namespace + ":verdict:" + s.mac(authorization)
}

// Fold returns authorization with its scheme (what precedes the first
// space) in ASCII lower case: the credential, whatever the spelling of
// the scheme. Only ASCII letters fold, as HTTP's case-insensitivity is
// ASCII's, not Unicode's.
func Fold(authorization string) string {
	end := strings.IndexByte(authorization, ' ')
	if end < 0 {
		end = len(authorization)
	}
	if strings.IndexFunc(authorization[:end], func(r rune) bool { return 'A' <= r && r <= 'Z' }) < 0 {
		return authorization
	}
	b := []byte(authorization)
	for i := range end {
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// Spelling tells apart the values that Fold makes one: which bytes of
// the scheme are ASCII capitals, as a bit each for the first 64 (exact,
// and 0 for a scheme in lower case), then mixed into the bits (FNV-1a)
// for a longer scheme.
func Spelling(authorization string) uint64 {
	var bits uint64
	for i := 0; i < len(authorization) && authorization[i] != ' '; i++ {
		if c := authorization[i]; 'A' <= c && c <= 'Z' {
			if i < 64 {
				bits |= 1 << i
			} else {
				bits = (bits ^ uint64(i)) * 0x100000001b3
			}
		}
	}
	return bits
}

func (s *Sealer) mac(authorization string) string {
	m := hmac.New(sha256.New, s.macKey)
	m.Write([]byte(authorization))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Seal encrypts plaintext for storage under key: version, key id, nonce,
// then the ciphertext and its tag.
func (s *Sealer) Seal(key string, plaintext []byte) []byte {
	head := 1 + len(s.keyID)
	out := make([]byte, head+s.aead.NonceSize(), head+s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	out[0] = sealVersion
	copy(out[1:], s.keyID[:])
	nonce := out[head:]
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	return s.aead.Seal(out, nonce, plaintext, []byte(key))
}

// Open returns the plaintext sealed under key, or false for a value that
// is foreign, corrupt, sealed under another key or by another secret.
func (s *Sealer) Open(key string, sealed []byte) ([]byte, bool) {
	head := 1 + len(s.keyID)
	if len(sealed) < head+s.aead.NonceSize()+s.aead.Overhead() || sealed[0] != sealVersion ||
		!hmac.Equal(sealed[1:head], s.keyID[:]) {
		return nil, false
	}
	nonce, ct := sealed[head:head+s.aead.NonceSize()], sealed[head+s.aead.NonceSize():]
	plain, err := s.aead.Open(nil, nonce, ct, []byte(key))
	return plain, err == nil
}
