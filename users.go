package management

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
)

// EmailVerificationStatus is the state of a User's email verification.
// Values the SDK does not know are kept as sent.
type EmailVerificationStatus string

// The email verification states of the spec.
const (
	// EmailUnset: the User is anonymous, or no verification was required.
	EmailUnset EmailVerificationStatus = "Unset"
	// EmailPending: a verification request was sent but not answered.
	EmailPending EmailVerificationStatus = "Pending"
	// EmailVerified: the User verified the registration email.
	EmailVerified EmailVerificationStatus = "Verified"
)

// ConsentValue is a User's answer to one consent key.
type ConsentValue string

// The consent values of the spec.
const (
	ConsentAccept ConsentValue = "Accept"
	ConsentReject ConsentValue = "Reject"
)

// User is a User as listed (the spec's User list item).
type User struct {
	ID        string    `json:"id"`
	Email     *string   `json:"email"`      // nil when the User is anonymous
	FirstName *string   `json:"first_name"` // nil when anonymous
	LastName  *string   `json:"last_name"`  // nil when anonymous
	CreatedAt Timestamp `json:"created_at"`
	UpdatedAt Timestamp `json:"updated_at"`
}

// UserDetails is a single User as read by UsersService.Get (the spec's SingleUser).
type UserDetails struct {
	User
	IsAnonymous               bool                    `json:"is_anonymous"`
	TermsOfUseVersionApproved *string                 `json:"terms_of_use_version_approved"` // nil when none was approved
	EmailVerificationStatus   EmailVerificationStatus `json:"email_verification_status"`
	Consents                  []Consent               `json:"consents"`
	// CustomSettings is nil when the service sent null. JSON numbers arrive
	// as json.Number so that no integer loses precision.
	CustomSettings   map[string]any    `json:"custom_settings"`
	AssociatedThings []AssociatedThing `json:"associated_things"`
}

// Consent is a User's answer to a consent key saved by the client application.
type Consent struct {
	Key       string       `json:"key"`
	Value     ConsentValue `json:"value"`
	UpdatedAt Timestamp    `json:"updated_at"`
}

// AssociatedThing is a Thing as it appears inside UserDetails.
type AssociatedThing struct {
	PhysicalID      string          `json:"physical_id"`
	Name            string          `json:"name"`
	Model           string          `json:"model"`
	FirmwareVersion string          `json:"firmware_version"`
	LastSeenAt      *Timestamp      `json:"last_seen_at"` // the wire name differs from Thing.LastSeen
	AssociationData AssociationData `json:"association_data"`
}

// AssociationData describes when a Thing and a User were associated.
type AssociationData struct {
	AssociatedAt Timestamp `json:"associated_at"`
}

// UsersService lists and reads Users and associates Things with them.
// Get it from Client.Users.
type UsersService service

// usersPage is the wire shape of a page of Users.
type usersPage struct {
	Users    []User  `json:"users"`
	NextPage *string `json:"next_page"`
}

func (p *usersPage) reserve(n int) { p.Users = make([]User, 0, n) }

func (p *usersPage) contents() ([]User, *string) { return p.Users, p.NextPage }

// validate refuses a page that lists nothing: no "users" array (absent or
// null, as in null or an error body sent with 200), or a User without an id.
// An empty array is a page, the last one.
func (p *usersPage) validate() error {
	if p.Users == nil {
		return errors.New(`no "users" array`)
	}
	for i := range p.Users {
		if p.Users[i].ID == "" {
			return fmt.Errorf("users[%d] has no id", i)
		}
	}
	return nil
}

// validate refuses a body that is not a User: without an id, as null or an
// error body sent with 200 are.
func (u *UserDetails) validate() error {
	if u.ID == "" {
		return errors.New("no User id")
	}
	return nil
}

func (s *UsersService) list() list[usersPage, User] {
	return list[usersPage, User]{client: s.c(), path: "/users", contents: (*usersPage).contents, reserve: (*usersPage).reserve}
}

// List iterates over the Users, page after page, in the order opts asks
// for (nil: creation time, descending), or from opts.NextPage. It copies
// opts and never modifies it. Each range over the result starts again from
// the first page; breaking out of the loop stops fetching. On an error,
// including a next_page link that is not a path on the base URL or that
// was already followed, it yields (nil, err) once and stops. The yielded
// Users point into the page they came from.
//
//	for u, err := range client.Users.List(ctx, nil) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(u.ID)
//	}
//
// API: GET /users, then GET {next_page}
func (s *UsersService) List(ctx context.Context, opts *ListOptions) iter.Seq2[*User, error] {
	return s.list().all(ctx, opts)
}

// ListPage fetches one page of Users: the first page in the order opts
// asks for, or the page opts.NextPage links to. To fetch the next page,
// pass the returned Page.NextPage as ListOptions.NextPage. A next_page
// link that List would refuse (another host, a dot segment, a page that
// links to itself, ...) is not handed on: ListPage returns the page with
// its Items, an empty NextPage, and an error matching ErrInvalidPageLink,
// as List yields the items, then the error. A caller paging by hand should
// also stop on a link it has already followed, as List does.
//
// API: GET /users or GET {next_page}
func (s *UsersService) ListPage(ctx context.Context, opts *ListOptions) (*Page[*User], error) {
	return s.list().page(ctx, opts)
}

// Get returns the User with id userID, with its consents, custom settings
// and associated Things. A User that does not exist yields an error
// matching ErrNotFound; a 2xx answer that is not a User with an id (null,
// an error body) yields a *DecodeError.
//
// API: GET /users/{user_id}
func (s *UsersService) Get(ctx context.Context, userID string) (*UserDetails, error) {
	id, err := pathSegment("userID", userID)
	if err != nil {
		return nil, err
	}
	var u UserDetails
	req := s.c().newRequest(http.MethodGet, "/users/"+id, "", nil).named("/users/{user_id}", userID)
	if _, err := s.c().do(ctx, req, &u); err != nil {
		return nil, err
	}
	return &u, nil
}
