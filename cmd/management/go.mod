module github.com/serviceconnect/management/cmd/management

go 1.26.0

toolchain go1.27.4

replace github.com/serviceconnect/management => ../..

require (
	github.com/creack/pty v1.1.24
	github.com/google/go-cmp v0.7.0
	github.com/itchyny/gojq v0.12.20
	github.com/serviceconnect/management v0.1.0
	github.com/spf13/cobra v1.10.2
	github.com/vbauerster/cupwriter v0.0.4
	github.com/vbauerster/mpb/v8 v8.15.0
)

require (
	github.com/VividCortex/ewma v1.2.0 // indirect
	github.com/acarl005/stripansi v0.0.0-20180116102854-5a71ef0e047d // indirect
	github.com/clipperhouse/uax29/v2 v2.7.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/itchyny/timefmt-go v0.1.9 // indirect
	github.com/mattn/go-runewidth v0.0.31 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
