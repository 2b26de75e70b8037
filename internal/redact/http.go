package redact

import "strings"

// What an HTTP exchange shows of a credential, known to both the SDK,
// which redacts the texts of its errors, and managementtest's recorder,
// which writes exchanges down: where a credential stands by position,
// so that it is searched for by value everywhere else.

// AuthForms returns the forms of an Authorization value that an echo may
// take: the whole "<scheme> <credential>" and the credential alone.
func AuthForms(h string) []string {
	if _, tok, ok := strings.Cut(strings.TrimSpace(h), " "); ok {
		return []string{h, tok}
	}
	return []string{h}
}

// CredentialHeader reports whether a header of this name can carry a
// credential by its name: cookies, and anything named for authentication,
// a token, a key, a secret, a session, a signature or a credential. A
// credential echoed under an innocent name is caught by value.
func CredentialHeader(name string) bool {
	n := strings.ToLower(name)
	for _, word := range []string{"cookie", "auth", "token", "secret", "key", "session", "signature", "credential"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}
