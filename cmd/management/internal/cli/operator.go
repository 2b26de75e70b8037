package cli

import (
	"regexp"
	"strings"

	"github.com/serviceconnect/management"
)

// The SDK's error texts speak to programmers: they name the fields of
// management.Config ("check Config.BaseURL and Config.PathPrefix"), but
// those of a Config from management.ConfigFromEnv by their environment
// variables. An operator sets environment variables and flags, so the tool
// names those, in every message it prints, whether the SDK refused the
// configuration up front or the service's answer revealed it (a 404 or a
// redirect from the token endpoint): a field the SDK names is one a flag
// set, named as that flag, or one the SDK's texts always name as a field.

// operatorNames are what an operator sets for each Config field the SDK's
// texts may name.
var operatorNames = map[string]string{
	"BaseURL":           management.EnvBaseURL + " (or --base-url)",
	"ClientID":          management.EnvClientID + " (or --client-id)",
	"ClientSecret":      management.EnvClientSecret + " (or --client-secret-stdin)",
	"PathPrefix":        management.EnvPathPrefix,
	"UserAgent":         management.EnvUserAgent,
	"UnsetMarker":       management.EnvUnsetMarker,
	"MaxRetries":        management.EnvMaxRetries,
	"RetryWaitMin":      management.EnvRetryWaitMin,
	"RetryWaitMax":      management.EnvRetryWaitMax,
	"RefreshMargin":     management.EnvRefreshMargin,
	"MaxResponseBytes":  management.EnvMaxResponseBytes,
	"AllowInsecureHTTP": management.EnvAllowInsecureHTTP + "=true",
}

// configField matches a Config field the SDK names, with or without
// "Config.": "write BaseURL as ..." names it bare.
var configField = regexp.MustCompile(`\b(?:Config\.)?(` + strings.Join(fieldNames(), "|") + `)\b`)

func fieldNames() []string {
	names := make([]string, 0, len(operatorNames))
	for n := range operatorNames {
		names = append(names, n)
	}
	return names
}

// forOperators is msg with the Config fields it names replaced by the
// flags that set them on this command line (flags, by field), or else by
// their environment variables and flags. The tool sets no TokenSource, so
// a clause about one is dropped.
func forOperators(msg string, flags map[string]string) string {
	msg = strings.ReplaceAll(msg, " unless Config.TokenSource is set", "")
	return configField.ReplaceAllStringFunc(msg, func(m string) string {
		field := strings.TrimPrefix(m, "Config.")
		if flag, ok := flags[field]; ok {
			return flag
		}
		return operatorNames[field]
	})
}
