package management

// NewAssociation describes a Thing to associate with a User. Every field is
// required. PhysicalID must equal the physical id the client application sets
// when it associates the Thing through the application SDK.
type NewAssociation struct {
	PhysicalID      string `json:"physical_id"`
	Model           string `json:"model"`
	FirmwareVersion string `json:"firmware_version"`
}
