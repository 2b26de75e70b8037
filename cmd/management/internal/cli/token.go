package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/errtext"
	"github.com/spf13/cobra"
)

// TokenCheckOptions are the flags of token check, and what tokenCheckRun
// needs besides: NewCmdTokenCheck fills them from the command line, tests
// fill them directly.
type TokenCheckOptions struct {
	IO     *IOStreams
	Client func() (*management.Client, error)
	// ReadLine reads a line of standard input (after the client secret's,
	// when that is read there too); flag names it in errors.
	ReadLine func(flag string) (string, error)
	// FakeToken, set with --fake, issues an End User token for a User of
	// the fake service.
	FakeToken func(userID string) string

	TokenStdin bool
	Output     string
}

// NewCmdTokenCheck returns token check. runF, when not nil, is called with
// the options in place of tokenCheckRun.
func NewCmdTokenCheck(f *Factory, runF func(*TokenCheckOptions) error) *cobra.Command {
	opts := &TokenCheckOptions{IO: f.IO, Client: f.Client, ReadLine: f.readLine}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check an End User access token: valid or not, for which User and role",
		Long: `Ask the service whether an End User access token is valid, and print the
verdict: valid or not, the User's id and role. The token is read from
$` + EnvEndUserToken + `, or from a line of standard input with --token-stdin
(after the client secret's line, with --client-secret-stdin): never from an
argument, and never printed. A bare token is sent as "Bearer <token>".

Exit status: 0 when the token is valid, 1 when it is not.`,
		Example: `  read -rs MANAGEMENT_END_USER_TOKEN && export MANAGEMENT_END_USER_TOKEN && management token check
  pass show app/end-user-token | management token check --token-stdin -o json`,
		Args: exactArgs(),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if f.fake { // a global flag: known once the command line is parsed
				opts.FakeToken = func(userID string) string { return f.fakeServer().IssueEndUserToken(userID) }
			}
			if runF != nil {
				return runF(opts)
			}
			return tokenCheckRun(cmd.Context(), opts)
		}),
	}
	cmd.Flags().BoolVar(&opts.TokenStdin, "token-stdin", false, "read the End User token from a line of standard input")
	addOutputFlag(cmd, &opts.Output, allFormats...)
	addJQFlag(cmd, f.IO, &opts.Output)
	return cmd
}

func tokenCheckRun(ctx context.Context, opts *TokenCheckOptions) error {
	out, err := chooseFormat(opts.Output, opts.IO.IsStdoutTTY(), allFormats...)
	if err != nil {
		return err
	}
	client, err := opts.Client() // first: the client secret's line comes first on standard input
	if err != nil {
		return err
	}
	token, err := opts.token()
	if err != nil {
		return err
	}
	auth, err := client.Authenticate(ctx, wireToken(token))
	if err != nil {
		return err
	}
	scrub(auth, token)
	if err := printOne(opts.IO.OutFor(out), out, (*authAnswer)(auth), authColumns, viewAuth); err != nil {
		return err
	}
	if !auth.Valid {
		return errtext.Errorf("the End User token is not valid")
	}
	return nil
}

// token returns the End User token to check: from standard input, the
// environment, or, with --fake and neither, one the fake issues.
func (o *TokenCheckOptions) token() (string, error) {
	if o.TokenStdin {
		return o.ReadLine("--token-stdin")
	}
	if t := strings.TrimSpace(os.Getenv(EnvEndUserToken)); t != "" {
		return t, nil
	}
	if o.FakeToken != nil {
		const user = "u-ada"
		fmt.Fprintf(o.IO.ErrOut, "No End User token given: checking one the fake service issued for %s.\n", user)
		return o.FakeToken(user), nil
	}
	return "", usagef("no End User token: set %s, or give it on standard input with --token-stdin", EnvEndUserToken)
}

// wireToken is the token as the authenticate endpoint takes it,
// "<type> <token>": a bare token is a Bearer token.
func wireToken(token string) string {
	if strings.ContainsAny(token, " \t") {
		return token
	}
	return "Bearer " + token
}

// scrub removes the token from the texts of the service's answer, which
// could quote it: the tool never prints a token.
func scrub(auth *management.EndUserAuthentication, token string) {
	if auth.ClientResponse == nil {
		return
	}
	bare := token
	if _, after, ok := strings.Cut(token, " "); ok {
		bare = strings.TrimSpace(after)
	}
	for _, s := range []*string{&auth.ClientResponse.HTTPBody.ErrorMessage, &auth.ClientResponse.HTTPBody.Reason} {
		*s = strings.ReplaceAll(*s, bare, "REDACTED")
	}
}

// authAnswer is the verdict as the tool prints it. The SDK says "" for
// the user id and role of an invalid token; the service sends null, and
// so does the tool's JSON.
type authAnswer management.EndUserAuthentication

// MarshalJSON writes the verdict with null for an absent user id or role.
func (a authAnswer) MarshalJSON() ([]byte, error) {
	orNull := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return json.Marshal(struct {
		Valid          bool                       `json:"is_token_valid"`
		UserID         *string                    `json:"user_id"`
		Role           *string                    `json:"user_role"`
		ClientResponse *management.ClientResponse `json:"to_client_response"`
	}{a.Valid, orNull(a.UserID), orNull(string(a.Role)), a.ClientResponse})
}

var authColumns = []column[authAnswer]{
	rawColumn("is_token_valid", "VALID", func(a *authAnswer) (string, bool) { return fmt.Sprint(a.Valid), true }),
	textColumn("user_id", "USER", func(a *authAnswer) (string, bool) { return a.UserID, a.UserID != "" }),
	textColumn("user_role", "ROLE", func(a *authAnswer) (string, bool) { return string(a.Role), a.Role != "" }),
	rawColumn("to_client_response", "ANSWER TO RELAY", func(a *authAnswer) (string, bool) { return jsonCell(a.ClientResponse) }),
}

func viewAuth(w io.Writer, a *authAnswer) error {
	tw := newTable(w)
	defer tw.Flush()
	if !a.Valid {
		field(tw, "Valid", "no", true)
		if r := a.ClientResponse; r != nil {
			field(tw, "Answer to relay", fmt.Sprintf("%d %s: %s", r.HTTPCode, r.HTTPBody.Reason, r.HTTPBody.ErrorMessage), true)
		}
		return nil
	}
	field(tw, "Valid", "yes", true)
	field(tw, "User", a.UserID, a.UserID != "")
	role := string(a.Role)
	if a.Role == management.RoleServiceAccount {
		role += " (a management token, not an End User's)"
	}
	field(tw, "Role", role, true)
	return nil
}
