module github.com/serviceconnect/management

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/hashicorp/golang-lru/v2 v2.0.7
	github.com/jarcoal/httpmock v1.4.2
	golang.org/x/time v0.16.0
)

require github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
