package management

import (
	"context"
	"encoding/json"
	"time"

	"github.com/serviceconnect/management/internal/fleet"
)

// The lease on the fleet's token.
const (
	// tokenLease bounds how long one replica may hold the lease on
	// refreshing the fleet's token; past it, another replica takes over.
	tokenLease = 10 * time.Second
	// shortLeaseWait is the longest a replica whose token expires before
	// a lease would lapse waits for another replica's refresh before it
	// fetches its own; once its token has expired (its callers wait), it
	// waits four times what fetching and storing a token takes it, when it
	// knows (at least SharedStoreTimeout; see sharedTokens.urgent). A lease
	// left by a replica that died, or held on purpose, costs the fleet a
	// token request per replica, never a failed call.
	shortLeaseWait = time.Second
)

// sharedTokens keeps the fleet's management token in a SharedStore, sealed,
// so that the replicas of a service make one token request per token
// lifetime. The replica that needs a new token takes the lease, fetches and
// stores it; the others read it. A store that fails or is slow never fails a
// call: the replica fetches on its own. sharedVerdicts is its twin for
// verdicts on End User tokens.
type sharedTokens struct {
	store *fleet.Shared
	cache *tokenCache // whose current token tells how long to wait for another replica
	pace  fleet.Pace  // how long a token request takes this replica
}

// storedToken is a token as sealed in the store.
type storedToken struct {
	AccessToken string    `json:"access_token"`
	TokenType   string    `json:"token_type"`
	Expiry      time.Time `json:"expiry"`
	RefreshAt   time.Time `json:"refresh_at"`
	// Leased is set when the replica that stored it held the lease (see
	// storedVerdict.Leased).
	Leased bool `json:"leased,omitzero"`
}

// fetchFunc fetches a new token from the token endpoint and says when it is
// due for refresh.
type fetchFunc func(context.Context) (*Token, time.Time, error)

// token returns a token for this replica: the stored one when it is not
// due for refresh and is not refused (the access token the service has just
// refused with 401, "" for none); otherwise one this replica fetches under
// the lease and stores, or one another replica stores while this one waits
// (see patience); failing all that, one it fetches on its own. ctx carries
// the flight's budget of store time and its hurry, by which the callers
// that need a token now shorten its waits (see fleet.WithBudget).
func (s *sharedTokens) token(ctx context.Context, refused string, fetch fetchFunc) (*Token, time.Time, error) {
	patience, unhurried := s.patience(ctx)
	l := fleet.Lease{Key: s.store.Sealer().ManagementTokenLeaseKey(), TTL: tokenLease, Patience: patience, Unhurried: unhurried}
	got, found, unlock, out := fleet.Await(ctx, s.store, l, func() (storedToken, bool, error) { return s.read(ctx, refused) })
	if found {
		return &Token{AccessToken: got.AccessToken, TokenType: got.TokenType, Expiry: got.Expiry}, got.RefreshAt, nil
	}
	leased := unlock != nil
	if unlock == nil {
		unlock = func() {}
	}
	if err := ctx.Err(); err != nil {
		out.Judge(ctx, false)
		unlock()
		return nil, time.Time{}, err
	}
	start := time.Now()
	tok, refreshAt, err := fetch(ctx)
	if err != nil {
		out.Judge(ctx, false)
		unlock()
		return nil, time.Time{}, err
	}
	// The token is stored, then the lease released, while the callers
	// go on with it: a slow store delays no one, and the write is not
	// bounded by the flight's budget. A wait that ran out of patience is
	// judged first, by whether the lease's holder stored a token since.
	// A failing store may open the breaker, which logs and tells the
	// Observer: hosted code, contained, and the lease released still.
	go func() {
		ctx := fleet.WithoutBudget(context.WithoutCancel(ctx))
		defer s.store.Contain(ctx)
		defer unlock()
		if out != nil {
			st, found, _ := s.open(ctx)
			out.Judge(ctx, found && st.Leased && time.Now().Before(st.RefreshAt) && st.AccessToken != refused)
		}
		s.put(ctx, storedToken{AccessToken: tok.AccessToken, TokenType: tok.TokenType, Expiry: tok.Expiry, RefreshAt: refreshAt, Leased: leased})
		s.pace.Record(time.Since(start)) // as long as another replica waits for a token it fetches
	}()
	return tok, refreshAt, nil
}

// patience is how long this replica waits for another's refresh: the
// lease's lifetime while its own token outlives that, so that its callers
// are served meanwhile; otherwise shortLeaseWait, and never past its own
// token's expiry (its callers would then wait); once it has expired,
// urgent, and no more than the flight can afford (fleet.Patience): half
// the time left to the caller that needed the token, the store's time
// included. Callers that join the flight needing a token hurry it (see
// tokenCache.Token). unhurried says that the current token serves the
// callers meanwhile: the wait then runs even while leases are being
// waited out (fleet.Lease.Unhurried), so that dead verdict leases never
// cost the fleet a token request per replica.
func (s *sharedTokens) patience(ctx context.Context) (patience time.Duration, unhurried bool) {
	s.cache.mu.Lock()
	tok := s.cache.tok
	s.cache.mu.Unlock()
	if tok != nil {
		switch left := time.Until(tok.Expiry); {
		case left > tokenLease:
			return tokenLease, true
		case left > 0:
			return min(left, shortLeaseWait), true
		}
	}
	return fleet.Patience(ctx, s.urgent()), false
}

// urgent is how long a replica that needs a token now waits for
// another's refresh: four times what fetching and storing one takes this
// replica, at least SharedStoreTimeout and at most shortLeaseWait.
func (s *sharedTokens) urgent() time.Duration {
	return s.pace.Patience(s.store.Guard().Timeout, shortLeaseWait)
}

// read returns the stored token if it opens, is well formed, is not due
// for refresh and is not refused. A value that does not open is ignored:
// the lease's holder replaces it. A store that fails is an error, not an
// absent token.
func (s *sharedTokens) read(ctx context.Context, refused string) (storedToken, bool, error) {
	st, found, err := s.open(ctx)
	if !found || st.AccessToken == refused || !time.Now().Before(st.RefreshAt) {
		return storedToken{}, false, err
	}
	return st, true, nil
}

// open returns the stored token if it opens and is well formed, due for
// refresh or not; a failing store is an error.
func (s *sharedTokens) open(ctx context.Context) (storedToken, bool, error) {
	plain, err := s.store.Open(ctx, s.store.Sealer().ManagementTokenKey())
	var st storedToken
	switch {
	case err != nil || plain == nil:
		return st, false, err
	case json.Unmarshal(plain, &st) != nil,
		(&Token{AccessToken: st.AccessToken, TokenType: st.TokenType}).check("access_token", "token_type") != nil:
		return storedToken{}, false, nil
	}
	return st, true, nil
}

// put stores st until the token expires.
func (s *sharedTokens) put(ctx context.Context, st storedToken) {
	if ttl := time.Until(st.Expiry); ttl > 0 {
		plain, _ := json.Marshal(st) // strings and times always encode
		_ = s.store.Put(ctx, s.store.Sealer().ManagementTokenKey(), plain, ttl)
	}
}
