package actions

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// Issue 29: one redaction rule for everything a command prints or writes. What the
// reporter was told to Mask, and credentials in URLs and Authorization values, reach
// neither the log lines, annotations and groups, nor the step outputs and summary, in
// Actions or outside it.
func TestReporterRedactsEverything(t *testing.T) {
	const token = "ghs_reporterTestToken0123456789"
	leaky := "GET https://robot:pa55w0rd-in-url@mirror.example/x answered 401: Bearer " + token + " and " + token
	for _, inActions := range []bool{false, true} {
		e, outFile, sumFile := actionsEnv(t)
		if !inActions {
			e = map[string]string{}
		}
		var buf bytes.Buffer
		r := New(withGetenv(env(e)), WithWriter(&buf))
		r.Mask(token)
		_ = r.Group("group "+leaky, func() error {
			r.Warningf("warning %s", leaky)
			r.Errorf("error %s", leaky)
			return nil
		})
		if err := r.SetOutputs(context.Background(), map[string]string{"updates": leaky}); err != nil {
			t.Fatal(err)
		}
		if err := r.AddSummary(context.Background(), "md "+leaky, "text "+leaky); err != nil {
			t.Fatal(err)
		}
		out := strings.ReplaceAll(buf.String(), "::add-mask::"+token, "")
		files := ""
		if inActions {
			for _, f := range []string{outFile, sumFile} {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				files += string(b)
			}
		}
		for _, secret := range []string{token, "pa55w0rd-in-url"} {
			if strings.Contains(out+files, secret) {
				t.Errorf("in Actions %v: %q was written:\n%s\n%s", inActions, secret, out, files)
			}
		}
		for _, w := range []string{"group ", "warning ", "error ", "text "} {
			if !inActions && !strings.Contains(out, w+"GET https://robot:xxxxx@mirror.example/x") {
				t.Errorf("outside Actions: %q line missing or not redacted as the rule says:\n%s", w, out)
			}
		}
	}
}
