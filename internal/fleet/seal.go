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
//	mg1:<ns>:verdict:{<mac>}:epoch  an End User token's epoch, set by Forget (see the root's sharedverdicts.go)
//	mg1:<ns>:verdict:{<mac>}[:e<epoch>]  the verdict, under the epoch read before asking
//	mg1:<ns>:verdict:{<mac>}[:e<epoch>]:lease  the lease on asking about it

// ManagementTokenKey is the storage key of the fleet's management token.
func (s *Sealer) ManagementTokenKey() string { return "mg1:{" + s.namespace + "}:token" }

// ManagementTokenLeaseKey is the storage key of the lease on refreshing it.
func (s *Sealer) ManagementTokenLeaseKey() string { return s.ManagementTokenKey() + ":lease" }

// VerdictStem is the storage key of the entries on an Authorization
// header value: the verdict's (when no epoch was set), and the stem of its
// lease's, epoch's and epoch-bound verdicts' keys.
func (s *Sealer) VerdictStem(authorization string) string {
	return "mg1:" + s.namespace + ":verdict:{" + s.mac(authorization) + "}"
}

// LegacyVerdictKey is the key the layout before hash tags gave the verdict on
// authorization, which Forget still deletes so that replicas not yet
// upgraded during a rolling deploy stop accepting a forgotten token.
func (s *Sealer) LegacyVerdictKey(authorization string) string {
	return "mg1:" + s.namespace + ":verdict:" + s.mac(authorization)
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
