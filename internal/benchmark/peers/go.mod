module github.com/serviceconnect/management/internal/benchmark/peers

go 1.26.0

require (
	github.com/oapi-codegen/runtime v1.9.0
	github.com/serviceconnect/management v0.0.0
	golang.org/x/oauth2 v0.38.0
)

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	golang.org/x/time v0.16.0 // indirect
)

replace github.com/serviceconnect/management => ../../..
