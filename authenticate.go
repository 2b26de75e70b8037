package management

// Role is the role of an authenticated token's owner.
type Role string

// The roles the authenticate endpoint reports.
const (
	// RoleAppUser is the role of an End User.
	RoleAppUser Role = "APPUSER"
	// RoleServiceAccount is reported when a management token was presented
	// instead of an End User token.
	RoleServiceAccount Role = "SERVICE_ACCOUNT"
)

// EndUserAuthentication is the service's verdict on an End User access token.
type EndUserAuthentication struct {
	Valid          bool            `json:"is_token_valid"`
	UserID         string          `json:"user_id"`            // "" when invalid
	Role           Role            `json:"user_role"`          // RoleAppUser, RoleServiceAccount; "" when invalid
	ClientResponse *ClientResponse `json:"to_client_response"` // nil when valid
}

// ClientResponse is the answer the service suggests a backend relays to its
// client when an End User token is invalid.
type ClientResponse struct {
	HTTPCode int             `json:"http_code"`
	HTTPBody ClientErrorBody `json:"http_body"`
}

// ClientErrorBody is the body of a ClientResponse.
type ClientErrorBody struct {
	ErrorCode    int    `json:"error_code"`
	Reason       string `json:"reason"` // lower case: "auth.unauthorized"
	ErrorMessage string `json:"error_message"`
}
