package peerapi

// client.gen.go is what oapi-codegen v2 makes of the API's OpenAPI document
// (../openapi.yaml, a copy of the one the project is specified by), with the
// generator's defaults for a client and its models. It is committed as
// generated and never edited: the peer benchmark measures the client a team
// that does not use the SDK would generate. The version is pinned so that a
// regeneration gives the same file.
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../openapi.yaml
