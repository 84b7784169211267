package oci_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/oci"
)

// secret is the credential every case below hides in a malformed
// credentials file: no error or log line may hold any 6 bytes of it, as
// is or base64-encoded.
const secret = "Sup3r-S3cret-Passw0rd-xyzzy"

// leaks returns the first piece of secret (or of its base64) that s holds.
func leaks(s string) string {
	for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
		for i := 0; i+6 <= len(form); i++ {
			if strings.Contains(s, form[i:i+6]) {
				return form[i : i+6]
			}
		}
	}
	return ""
}

// TestCredentialsNeverEchoed: credentials files malformed in each of the
// ways a hand-written one is are refused with an error that names the
// file, entry and field, and neither the error nor the log holds the
// secret.
func TestCredentialsNeverEchoed(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, false)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	auths := func(entry string) string { return fmt.Sprintf(`{"auths":{%q:%s}}`, reg.host, entry) }
	for _, tc := range []struct{ name, file, want string }{
		{"auth without a colon", auths(fmt.Sprintf(`{"auth":%q}`, b64(secret))), `auth: does not decode to user:password`},
		{"auth not base64", auths(fmt.Sprintf(`{"auth":%q}`, secret+"!!")), `auth: is not base64`},
		{"auth a number", auths(`{"auth": 12345}`), `is not an object of strings`},
		{"not JSON", secret + `{"auths":{}}`, `is not a map`},
		{"JSON cut short", `{"auths":{"r":{"auth":"` + secret, `is not YAML or JSON`},
		{"secret whose data is a string", "apiVersion: v1\nkind: Secret\ndata: " + b64(auths(fmt.Sprintf(`{"auth":%q}`, b64("bob:"+secret)))) + "\n",
			"data: is not a map (line 3"},
		{"secret whose data is the password", "kind: Secret\ndata: " + secret + "\n", "data: is not a map (line 2"},
		{"secret whose dockerconfigjson is not JSON", "kind: Secret\ndata:\n  .dockerconfigjson: " + b64(secret) + "\n",
			"data[.dockerconfigjson] is not a docker config"},
		{"secret whose stringData is not JSON", "kind: Secret\nstringData:\n  .dockerconfigjson: '" + secret + "'\n",
			"stringData[.dockerconfigjson] is not a docker config"},
		{"secret with a malformed auth", "kind: Secret\nstringData:\n  .dockerconfigjson: '" + auths(fmt.Sprintf(`{"auth":%q}`, b64(secret))) + "'\n",
			"auth: does not decode to user:password"},
		{"a list", "- " + secret + "\n", "is not a map"},
		{"kind a list", "kind: [" + secret + "]\n", "kind: is not a string"},
		{"YAML syntax", "kind: Secret\ndata: {" + secret + "\n", "is not YAML or JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The host's configuration reads the file when it loads;
			// the fetch reads it again (a renewed secret is used).
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "creds"), []byte(tc.file), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "host.yaml"),
				fmt.Appendf(nil, "modules:\n- image: %s\n  plainHTTP: true\n  dockerConfig: creds\n", reg.ref("p/m:v1")), 0o600))
			_, err := config.Load(filepath.Join(dir, "host.yaml"))
			require.ErrorContains(t, err, tc.want)
			if l := leaks(err.Error()); l != "" {
				t.Errorf("the configuration's error holds %q of the secret: %v", l, err)
			}
			var log strings.Builder
			m := config.Module{Name: "m", Image: reg.ref("p/m:v1"), PlainHTTP: true, DockerConfig: filepath.Join(dir, "creds")}
			_, fetchErr := oci.Fetch(ctx, &m, oci.FetchOptions{Logger: textLogger(&log)})
			require.Error(t, fetchErr)
			require.ErrorContains(t, fetchErr, tc.want)
			if l := leaks(fetchErr.Error()); l != "" {
				t.Errorf("the fetch's error holds %q of the secret: %v", l, fetchErr)
			}
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "creds")
			if l := leaks(err.Error()); l != "" {
				t.Errorf("the error holds %q of the secret: %v", l, err)
			}
			if l := leaks(log.String()); l != "" {
				t.Errorf("the log holds %q of the secret: %s", l, log.String())
			}
		})
	}

	// Credentials handed to the oci package directly (kubeplug push
	// --docker-config reads them through the same check).
	o := reg.options()
	o.DockerConfig, o.DockerConfigFrom = []byte(auths(fmt.Sprintf(`{"auth":%q}`, b64(secret)))), "given.json"
	_, err := oci.Pull(ctx, reg.ref("p/m:v1"), o)
	require.ErrorContains(t, err, "given.json")
	require.Empty(t, leaks(err.Error()), "the error holds the secret: %v", err)
}
