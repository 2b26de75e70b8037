package management

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
type UsersService struct {
	client *Client
}
