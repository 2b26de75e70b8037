package benchmark

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/serviceconnect/management"
)

// The baseline is what a careful user would write by hand with net/http and
// encoding/json: the same requests and headers as the SDK, one token fetched
// up front, and bodies decoded into equivalent structs (timestamps as
// time.Time, custom settings as map[string]any with json.Number). It has no
// retries, no token refresh, no link checks, no size limits and no check
// for trailing data after the JSON value. baselineAuthCache keys verdicts
// by the raw header rather than its SHA-256 digest, and calls the service
// on the checking goroutine rather than on a detached single-flight
// goroutine, which Authenticator.Check starts for every check with the
// cache off. What the SDK costs beyond it is the price of those.

// baseUser is the baseline's copy of the wire User.
type baseUser struct {
	ID        string    `json:"id"`
	Email     *string   `json:"email"`
	FirstName *string   `json:"first_name"`
	LastName  *string   `json:"last_name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

type baseUserDetails struct {
	baseUser
	IsAnonymous               bool                 `json:"is_anonymous"`
	TermsOfUseVersionApproved *string              `json:"terms_of_use_version_approved"`
	EmailVerificationStatus   string               `json:"email_verification_status"`
	Consents                  []baseConsent        `json:"consents"`
	CustomSettings            map[string]any       `json:"custom_settings"`
	AssociatedThings          []baseAssociatedItem `json:"associated_things"`
}

type baseConsent struct {
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	UpdatedAt time.Time `json:"updated_at"`
}

type baseAssociatedItem struct {
	PhysicalID      string     `json:"physical_id"`
	Name            string     `json:"name"`
	Model           string     `json:"model"`
	FirmwareVersion string     `json:"firmware_version"`
	LastSeenAt      *time.Time `json:"last_seen_at"`
	AssociationData struct {
		AssociatedAt time.Time `json:"associated_at"`
	} `json:"association_data"`
}

type baseUsersPage struct {
	Users    []baseUser `json:"users"`
	NextPage *string    `json:"next_page"`
}

type baseAuthentication struct {
	Valid          bool    `json:"is_token_valid"`
	UserID         *string `json:"user_id"`
	Role           *string `json:"user_role"`
	ClientResponse *struct {
		HTTPCode int `json:"http_code"`
		HTTPBody struct {
			ErrorCode    int    `json:"error_code"`
			Reason       string `json:"reason"`
			ErrorMessage string `json:"error_message"`
		} `json:"http_body"`
	} `json:"to_client_response"`
}

type baseEndUser struct {
	ID   string
	Role string
}

// baselineClient is the hand-written client.
type baselineClient struct {
	http      *http.Client
	base      string // scheme://host:port
	auth      string // "Bearer <token>", fetched once
	userAgent string
}

// newBenchHTTPClient is the transport both sides use where the SDK's
// default is replaced: the SDK's own default pool settings, with room for
// idleConns connections to the one host.
func newBenchHTTPClient(idleConns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = idleConns
	t.MaxIdleConns = max(t.MaxIdleConns, idleConns)
	return &http.Client{Transport: t}
}

// newBaselineClient fetches the one token the baseline uses.
func newBaselineClient(ctx context.Context, base string, hc *http.Client) (*baselineClient, error) {
	b := &baselineClient{http: hc, base: base, userAgent: "management-go/" + management.Version}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+benchPrefix+"/auth/token",
		bytes.NewReader([]byte(`{"grant_type":"client_credentials"}`)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(benchClientID+":"+benchClientSecret)))
	req.Header.Set("Content-Type", "application/json")
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if err := b.send(req, &tok); err != nil {
		return nil, err
	}
	b.auth = tok.TokenType + " " + tok.AccessToken
	return b, nil
}

// newRequest builds a request with the headers the SDK sends.
func (b *baselineClient) newRequest(ctx context.Context, method, u string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", b.auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", b.userAgent)
	return req, nil
}

// send makes the exchange and decodes a 200 body into out.
func (b *baselineClient) send(req *http.Request, out any) error {
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("%s %s: status %d", req.Method, req.URL.Path, resp.StatusCode)
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // so the connection is reused
	return nil
}

func (b *baselineClient) getUser(ctx context.Context, id string) (*baseUserDetails, error) {
	req, err := b.newRequest(ctx, http.MethodGet, b.base+benchPrefix+"/users/"+url.PathEscape(id), nil)
	if err != nil {
		return nil, err
	}
	var u baseUserDetails
	if err := b.send(req, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// listUsers calls fn with every User, following next_page links.
func (b *baselineClient) listUsers(ctx context.Context, fn func(*baseUser)) error {
	u := b.base + benchPrefix + "/users"
	for {
		req, err := b.newRequest(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		var p baseUsersPage
		if err := b.send(req, &p); err != nil {
			return err
		}
		for i := range p.Users {
			fn(&p.Users[i])
		}
		if p.NextPage == nil {
			return nil
		}
		u = b.base + *p.NextPage
	}
}

func (b *baselineClient) authenticate(ctx context.Context, header string) (*baseAuthentication, error) {
	body, err := json.Marshal(struct {
		AccessToken string `json:"access_token"`
	}{header})
	if err != nil {
		return nil, err
	}
	req, err := b.newRequest(ctx, http.MethodPost, b.base+benchPrefix+"/authenticate", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	var a baseAuthentication
	if err := b.send(req, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// baselineAuthCache is the hand-written equivalent of Authenticator's
// cache: valid verdicts by header value, under a mutex, for ttl
// (negative: no cache).
type baselineAuthCache struct {
	client *baselineClient
	ttl    time.Duration

	mu sync.Mutex
	m  map[string]baselineVerdict
}

type baselineVerdict struct {
	user    baseEndUser
	expires time.Time
}

func (c *baselineAuthCache) check(r *http.Request) (*baseEndUser, error) {
	header := r.Header.Get("Authorization")
	if header == "" {
		return nil, fmt.Errorf("missing token")
	}
	now := time.Now()
	if c.ttl >= 0 {
		c.mu.Lock()
		v, ok := c.m[header]
		c.mu.Unlock()
		if ok && now.Before(v.expires) {
			u := v.user
			return &u, nil
		}
	}
	a, err := c.client.authenticate(r.Context(), header)
	if err != nil {
		return nil, err
	}
	if !a.Valid || a.UserID == nil || a.Role == nil || *a.Role != "APPUSER" {
		return nil, fmt.Errorf("token refused")
	}
	v := baselineVerdict{user: baseEndUser{ID: *a.UserID, Role: *a.Role}, expires: now.Add(c.ttl)}
	if c.ttl >= 0 {
		c.mu.Lock()
		if c.m == nil {
			c.m = make(map[string]baselineVerdict)
		}
		c.m[header] = v
		c.mu.Unlock()
	}
	u := v.user
	return &u, nil
}
