package peers

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
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/benchmark/peers/peerapi"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// newTransport is the connection pool every column gets, so that they
// differ in nothing but the client: net/http's defaults with room for
// idle connections to the one host.
func newTransport(tb testing.TB, idle int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = idle
	t.MaxIdleConns = max(t.MaxIdleConns, idle)
	tb.Cleanup(t.CloseIdleConnections)
	return t
}

// The SDK column.

func newSDK(tb testing.TB, s *server, hc *http.Client) *management.Client {
	tb.Helper()
	c, err := sdkSetup(s.URL, hc)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// The generated column: the client oapi-codegen made of openapi.yaml
// (package peerapi), authorised by golang.org/x/oauth2's client credentials
// flow, as a team would wire them.

// jsonGrant is the one shim the generated column needs. x/oauth2 sends the
// client credentials grant as a form (RFC 6749, section 4.4); this API takes
// {"grant_type":"client_credentials"} as JSON. jsonGrant rewrites that one
// request, and passes every other one to next unchanged.
type jsonGrant struct{ next http.RoundTripper }

// RoundTrip sends r, its form body turned into JSON when it is a token request.
func (t jsonGrant) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || r.Body == nil {
		return t.next.RoundTrip(r)
	}
	form, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	values, err := url.ParseQuery(string(form))
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(map[string]string{"grant_type": values.Get("grant_type")})
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Body, r.ContentLength, r.GetBody = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	r.Header.Set("Content-Type", "application/json")
	return t.next.RoundTrip(r)
}

// generated is the generated column's client.
type generated struct {
	*peerapi.ClientWithResponses
	creds *clientcredentials.Config
}

// newGenerated wires the generated client to x/oauth2 over transport t,
// with the jsonGrant shim (shim false: without it, as the libraries come),
// timeout being the Timeout of the http.Client x/oauth2 makes.
func newGenerated(tb testing.TB, s *server, t http.RoundTripper, shim bool, timeout time.Duration) *generated {
	tb.Helper()
	if shim {
		t = jsonGrant{t}
	}
	g, err := generatedSetup(s.URL, t, timeout)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// generatedSetup is what a user of the generated client writes to set it
// up: x/oauth2's client credentials flow over transport t.
func generatedSetup(baseURL string, t http.RoundTripper, timeout time.Duration) (*generated, error) {
	creds := &clientcredentials.Config{
		ClientID: clientID, ClientSecret: clientSecret, TokenURL: baseURL + tokenPath,
		AuthStyle: oauth2.AuthStyleInHeader, // the API takes Basic credentials only
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: t})
	hc := creds.Client(ctx)
	hc.Timeout = timeout
	c, err := peerapi.NewClientWithResponses(baseURL, peerapi.WithHTTPClient(hc))
	if err != nil {
		return nil, err
	}
	return &generated{ClientWithResponses: c, creds: creds}, nil
}

// getUser is Users.Get with the generated client: a non-200 answer comes
// back as a response, not as an error, so it is turned into one here.
func (g *generated) getUser(ctx context.Context, id string) (*peerapi.SingleUser, error) {
	resp, err := g.GetUserWithResponse(ctx, id)
	if err != nil {
		return nil, err
	}
	if resp.JSON200 == nil {
		return nil, fmt.Errorf("get user %s: status %d", id, resp.StatusCode())
	}
	return resp.JSON200, nil
}

// listUsers calls fn with every User. The generated client takes the page
// cursor as a parameter, so it is read from each next_page link.
func (g *generated) listUsers(ctx context.Context, fn func(*peerapi.User)) error {
	params := &peerapi.ListUsersParams{}
	for {
		resp, err := g.ListUsersWithResponse(ctx, params)
		if err != nil {
			return err
		}
		if resp.JSON200 == nil {
			return fmt.Errorf("list users: status %d", resp.StatusCode())
		}
		for i := range resp.JSON200.Users {
			fn(&resp.JSON200.Users[i])
		}
		if resp.JSON200.NextPage == nil {
			return nil
		}
		link, err := url.Parse(*resp.JSON200.NextPage)
		if err != nil {
			return err
		}
		page := link.Query().Get("page")
		params = &peerapi.ListUsersParams{Page: &page}
	}
}

func (g *generated) authenticate(ctx context.Context, header string) (*peerapi.EndUserAuthenticationResponse, error) {
	resp, err := g.AuthenticateEndUserTokenWithResponse(ctx, peerapi.EndUserAuthenticationRequest{AccessToken: header})
	if err != nil {
		return nil, err
	}
	if resp.JSON200 == nil {
		return nil, fmt.Errorf("authenticate: status %d", resp.StatusCode())
	}
	return resp.JSON200, nil
}

// The raw column: what a careful user writes by hand with net/http and
// encoding/json (internal/benchmark's baseline, with a token fetched on
// first use and kept until it expires, under a mutex). Timestamps are
// time.Time, custom settings map[string]any with json.Number. It has no
// retries, no replay of a refused token, no size limits.

type rawUser struct {
	ID        string    `json:"id"`
	Email     *string   `json:"email"`
	FirstName *string   `json:"first_name"`
	LastName  *string   `json:"last_name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

type rawUserDetails struct {
	rawUser
	IsAnonymous               bool           `json:"is_anonymous"`
	TermsOfUseVersionApproved *string        `json:"terms_of_use_version_approved"`
	EmailVerificationStatus   string         `json:"email_verification_status"`
	Consents                  []rawConsent   `json:"consents"`
	CustomSettings            map[string]any `json:"custom_settings"`
	AssociatedThings          []rawThing     `json:"associated_things"`
}

type rawConsent struct {
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	UpdatedAt time.Time `json:"updated_at"`
}

type rawThing struct {
	PhysicalID      string     `json:"physical_id"`
	Name            string     `json:"name"`
	Model           string     `json:"model"`
	FirmwareVersion string     `json:"firmware_version"`
	LastSeenAt      *time.Time `json:"last_seen_at"`
	AssociationData struct {
		AssociatedAt time.Time `json:"associated_at"`
	} `json:"association_data"`
}

type rawAuthentication struct {
	Valid  bool    `json:"is_token_valid"`
	UserID *string `json:"user_id"`
	Role   *string `json:"user_role"`
}

type rawClient struct {
	http   *http.Client
	base   string
	id     string
	secret string

	mu      sync.Mutex
	auth    string // "Bearer <token>"
	expires time.Time
}

func newRaw(s *server, t http.RoundTripper) *rawClient { return rawSetup(s.URL, t) }

func rawSetup(baseURL string, t http.RoundTripper) *rawClient {
	return &rawClient{http: &http.Client{Transport: t}, base: baseURL, id: clientID, secret: clientSecret}
}

// token returns the Authorization value, fetching a token when there is
// none or it has expired; the mutex makes concurrent callers wait for one fetch.
func (c *rawClient) token(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.auth != "" && time.Now().Before(c.expires) {
		return c.auth, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+tokenPath,
		bytes.NewReader([]byte(`{"grant_type":"client_credentials"}`)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(c.id+":"+c.secret)))
	req.Header.Set("Content-Type", "application/json")
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := c.send(req, &tok); err != nil {
		return "", err
	}
	c.auth = tok.TokenType + " " + tok.AccessToken
	c.expires = time.Now().Add(time.Duration(tok.ExpiresIn)*time.Second - 10*time.Second)
	return c.auth, nil
}

func (c *rawClient) do(ctx context.Context, method, u string, body []byte, out any) error {
	auth, err := c.token(ctx)
	if err != nil {
		return err
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return c.send(req, out)
}

// send makes the exchange and decodes a 200 body into out.
func (c *rawClient) send(req *http.Request, out any) error {
	resp, err := c.http.Do(req)
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
	_, _ = io.Copy(io.Discard, resp.Body) // so that the connection is reused
	return nil
}

func (c *rawClient) getUser(ctx context.Context, id string) (*rawUserDetails, error) {
	var u rawUserDetails
	if err := c.do(ctx, http.MethodGet, c.base+prefix+"/users/"+url.PathEscape(id), nil, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// listUsers calls fn with every User, following next_page links.
func (c *rawClient) listUsers(ctx context.Context, fn func(*rawUser)) error {
	u := c.base + prefix + "/users"
	for {
		var p struct {
			Users    []rawUser `json:"users"`
			NextPage *string   `json:"next_page"`
		}
		if err := c.do(ctx, http.MethodGet, u, nil, &p); err != nil {
			return err
		}
		for i := range p.Users {
			fn(&p.Users[i])
		}
		if p.NextPage == nil {
			return nil
		}
		u = c.base + *p.NextPage
	}
}

func (c *rawClient) authenticate(ctx context.Context, header string) (*rawAuthentication, error) {
	body, err := json.Marshal(map[string]string{"access_token": header})
	if err != nil {
		return nil, err
	}
	var a rawAuthentication
	if err := c.do(ctx, http.MethodPost, c.base+prefix+"/authenticate", body, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// checkUser fails unless every column decoded the same User.
func checkUser(id string, custom int) error {
	if id != userID || custom != 8 {
		return fmt.Errorf("decoded User %q with %d custom settings, want %q with 8", id, custom, userID)
	}
	return nil
}
