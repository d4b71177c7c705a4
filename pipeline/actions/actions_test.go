package actions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// actionsEnv makes fake GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, as the runner does.
func actionsEnv(t *testing.T) (map[string]string, string, string) {
	dir := t.TempDir()
	out, sum := filepath.Join(dir, "output"), filepath.Join(dir, "summary")
	for _, f := range []string{out, sum} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": out, "GITHUB_STEP_SUMMARY": sum}, out, sum
}

// parseOutputs reads a GITHUB_OUTPUT file the way the runner does (name<<DELIM ... DELIM).
func parseOutputs(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] == "" {
			continue
		}
		name, delim, ok := strings.Cut(lines[i], "<<")
		if !ok {
			t.Fatalf("line %q is not name<<DELIMITER", lines[i])
		}
		var val []string
		for i++; i < len(lines) && lines[i] != delim; i++ {
			val = append(val, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("output %s is not terminated by %s", name, delim)
		}
		out[name] = strings.Join(val, "\n")
	}
	return out
}

var rows = []Row{
	{Component: "openssl", Old: "3.5.7", New: "3.5.8", EOL: "2030-04-08 (LTS)"},
	{Component: "nginx", Old: "1.26.3", New: "1.26.3", EOL: "superseded by 1.28"},
	{Component: "zlib", Old: "1.3.1", New: ""},
}

func TestOutsideActionsPlainText(t *testing.T) {
	e, outFile, sumFile := actionsEnv(t)
	delete(e, "GITHUB_ACTIONS") // the files exist, but this is not a runner
	var buf bytes.Buffer
	r := New(withGetenv(env(e)), WithWriter(&buf))
	if r.InActions() {
		t.Fatal("InActions() = true without GITHUB_ACTIONS=true")
	}
	if err := r.SetOutputs(context.Background(), map[string]string{"changed": "true"}); err != nil {
		t.Fatal(err)
	}
	r.Mask("super-secret-token")
	if err := r.Group("Looking up", func() error { fmt.Fprintf(r.Writer(), "GET %s\n", "https://example.test"); return nil }); err != nil {
		t.Fatal(err)
	}
	r.Warningf("OpenSSL %s reached end of life", "3.3")
	if err := r.UpdateSummary(context.Background(), "Upstream updates", rows); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"== Looking up\nGET https://example.test\n",
		"warning: OpenSSL 3.3 reached end of life\n",
		"COMPONENT  OLD     NEW              EOL\n",
		"openssl    3.5.7   3.5.8            2030-04-08 (LTS)\n",
		"nginx      1.26.3  (unchanged)      superseded by 1.28\n",
		"zlib       1.3.1   (lookup failed)  -\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "::") || strings.Contains(got, "super-secret") {
		t.Errorf("plain-text output holds workflow commands or the secret:\n%s", got)
	}
	for _, f := range []string{outFile, sumFile} {
		if b, _ := os.ReadFile(f); len(b) != 0 {
			t.Errorf("%s was written outside Actions: %q", f, b)
		}
	}
}

func TestInActionsOutputsSummaryAnnotations(t *testing.T) {
	e, outFile, sumFile := actionsEnv(t)
	var buf bytes.Buffer
	r := New(withGetenv(env(e)), WithWriter(&buf))
	if !r.InActions() {
		t.Fatal("InActions() = false with GITHUB_ACTIONS=true")
	}
	r.Mask("ghs_line1secret\nghs_line2secret")
	err := r.Group("Looking up releases", func() error {
		r.Warningf("nginx 1.26 is no longer maintained:\n1.28 superseded it (100%% sure)")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	table := UpdateTableMarkdown("Upstream updates", rows)
	if err := r.SetOutputs(context.Background(), map[string]string{"changed": "true", "openssl_version": "3.5.8", "summary": table}); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateSummary(context.Background(), "Upstream updates", rows); err != nil {
		t.Fatal(err)
	}
	if err := r.ImageOutputs(context.Background(), ImageResult{Image: "ghcr.io/o/r/nginx", Digest: "sha256:" + strings.Repeat("a", 64), Tags: []string{"ghcr.io/o/r/nginx:1.26.3", "ghcr.io/o/r/nginx:latest"}}); err != nil {
		t.Fatal(err)
	}

	outs := parseOutputs(t, outFile)
	want := map[string]string{
		"changed": "true", "openssl_version": "3.5.8", "summary": table,
		"image": "ghcr.io/o/r/nginx", "digest": "sha256:" + strings.Repeat("a", 64),
		"ref":  "ghcr.io/o/r/nginx@sha256:" + strings.Repeat("a", 64),
		"tags": "ghcr.io/o/r/nginx:1.26.3\nghcr.io/o/r/nginx:latest",
	}
	for k, v := range want {
		if outs[k] != v {
			t.Errorf("output %s = %q, want %q", k, outs[k], v)
		}
	}
	if len(outs) != len(want) {
		t.Errorf("outputs = %v, want exactly %v", outs, want)
	}

	sum, _ := os.ReadFile(sumFile)
	for _, w := range []string{
		"### Upstream updates\n",
		"| component | old | new | EOL |\n",
		"| openssl | `3.5.7` | **3.5.8** | 2030-04-08 (LTS) |\n",
		"| nginx | `1.26.3` | (unchanged) | superseded by 1.28 |\n",
		"| zlib | `1.3.1` | (lookup failed) | - |\n",
		"- `ghcr.io/o/r/nginx:latest`\n",
	} {
		if !strings.Contains(string(sum), w) {
			t.Errorf("step summary lacks %q:\n%s", w, sum)
		}
	}

	got := buf.String()
	for _, w := range []string{
		"::add-mask::ghs_line1secret\n",
		"::add-mask::ghs_line2secret\n",
		"::group::Looking up releases\n",
		// The message's newline and percent sign are escaped, so the annotation stays one command.
		"::warning::nginx 1.26 is no longer maintained:%0A1.28 superseded it (100%25 sure)\n",
		"::endgroup::\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("stdout lacks %q:\n%s", w, got)
		}
	}
	if strings.Index(got, "::group::") > strings.Index(got, "::warning::") || strings.Index(got, "::warning::") > strings.Index(got, "::endgroup::") {
		t.Errorf("the warning is not inside the group:\n%s", got)
	}
}

// The library panics when it cannot write a file; the reporter returns errors instead.
func TestInActionsBrokenEnvironmentIsAnError(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no GITHUB_OUTPUT", map[string]string{"GITHUB_ACTIONS": "true"}, "GITHUB_OUTPUT is not set"},
		{"GITHUB_OUTPUT is a directory", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": dir}, "GitHub Actions setting output changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(withGetenv(env(tc.env)), WithWriter(&bytes.Buffer{}))
			err := r.SetOutputs(context.Background(), map[string]string{"changed": "true"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	r := New(withGetenv(env(map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": filepath.Join(dir, "missing", "x")})), WithWriter(&bytes.Buffer{}))
	if err := r.UpdateSummary(context.Background(), "t", rows); err == nil {
		t.Error("writing a summary into a missing directory did not fail")
	}
}

// A value carrying the file-command delimiter would end the value early and forge outputs.
func TestOutputInjectionRefused(t *testing.T) {
	e, outFile, _ := actionsEnv(t)
	r := New(withGetenv(env(e)), WithWriter(&bytes.Buffer{}))
	evil := "x\n" + fileDelimiter + "\nchanged<<" + fileDelimiter + "\nfalse"
	if err := r.SetOutputs(context.Background(), map[string]string{"title": evil}); err == nil {
		t.Fatal("a value holding the delimiter was accepted")
	}
	if err := r.SetOutputs(context.Background(), map[string]string{"bad\nname": "x"}); err == nil {
		t.Fatal("a name with a newline was accepted")
	}
	if b, _ := os.ReadFile(outFile); len(b) != 0 {
		t.Errorf("GITHUB_OUTPUT was written: %q", b)
	}
}

func TestMarkdownEscapesUpstreamText(t *testing.T) {
	md := UpdateTableMarkdown("t", []Row{{Component: "a|b", Old: "1`2", New: "<script>", EOL: "x\ny"}})
	if !strings.Contains(md, `| a\|b | `+"`12`"+` | **&lt;script&gt;** | x y |`) {
		t.Errorf("unescaped row:\n%s", md)
	}
}

// Issue 47: once the run's context is done (a signal, its deadline), no writer of the step
// outputs or summary writes anything, in Actions or outside it, and each says what it did
// not write.
func TestNothingIsWrittenOnceTheContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e, outFile, sumFile := actionsEnv(t)
	var buf bytes.Buffer
	in := New(withGetenv(env(e)), WithWriter(&buf))
	for name, err := range map[string]error{
		"SetOutputs":    in.SetOutputs(ctx, map[string]string{"changed": "true"}),
		"AddSummary":    in.AddSummary(ctx, "md", "text"),
		"UpdateSummary": in.UpdateSummary(ctx, "Upstream updates", rows),
		"ImageOutputs":  in.ImageOutputs(ctx, ImageResult{Image: "ghcr.io/o/r/nginx", Digest: "sha256:" + strings.Repeat("a", 64)}),
	} {
		if err == nil || !strings.Contains(err.Error(), "interrupted: the step") || !errors.Is(err, context.Canceled) {
			t.Errorf("%s after the context ended: %v, want an interruption naming what was not written", name, err)
		}
	}
	for _, f := range []string{outFile, sumFile} {
		if b, _ := os.ReadFile(f); len(b) > 0 {
			t.Errorf("%s written after the context ended:\n%s", f, b)
		}
	}
	delete(e, "GITHUB_ACTIONS")
	out := New(withGetenv(env(e)), WithWriter(&buf))
	if err := out.AddSummary(ctx, "md", "text"); err == nil || !strings.Contains(err.Error(), "interrupted: the summary was not written") {
		t.Errorf("AddSummary outside Actions after the context ended: %v", err)
	}
	if buf.Len() > 0 {
		t.Errorf("printed after the context ended: %q", buf.String())
	}
}
