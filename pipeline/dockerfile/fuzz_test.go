package dockerfile_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/dockerfile"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// FuzzRender: whatever nginx URL a lock holds (once the lock accepts it) and whatever mirror
// is asked for, the renderer never panics, and what it renders has the same instructions as
// the shipped lock's Dockerfile: no value starts a line of its own, every ADD is exactly
// "ADD --checksum=... SRC DST" with a SRC BuildKit takes as written (no $, no credentials).
// Seeds: testdata/fuzz/FuzzRender.
func FuzzRender(f *testing.F) {
	base := lock.Default()
	p0, err := plan.New(base)
	if err != nil {
		f.Fatal(err)
	}
	b0, err := dockerfile.Render(p0, base)
	if err != nil {
		f.Fatal(err)
	}
	want := instructions(string(b0))
	f.Add(base.MustComponent(lock.Nginx).URL, "")
	f.Add(base.MustComponent(lock.Nginx).URL, "http://127.0.0.1:8000/src")
	f.Fuzz(func(t *testing.T, nginxURL, mirror string) {
		l := lock.Default()
		c := l.MustComponent(lock.Nginx)
		c.URL = nginxURL
		l.SetComponent(c)
		if l.Validate() != nil {
			return
		}
		p, err := plan.New(l)
		if err != nil {
			return
		}
		var opts []dockerfile.Option
		if mirror != "" {
			opts = append(opts, dockerfile.WithSourceMirror(mirror))
		}
		b, err := dockerfile.Render(p, l, opts...)
		if err != nil {
			return
		}
		out := string(b)
		if got := instructions(out); got != want {
			t.Fatalf("the instructions changed:\n%s\nwant\n%s", got, want)
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "ADD ") {
				continue
			}
			f := strings.Fields(line)
			if len(f) != 4 || strings.ContainsAny(line, "$\"'\\\r\t") {
				t.Fatalf("ADD line %q", line)
			}
			if u, err := url.Parse(f[2]); err != nil || u.User != nil {
				t.Fatalf("ADD source %q: %v", f[2], err)
			}
		}
	})
}

// instructions is the first word of every line outside heredocs and comments, in order.
func instructions(df string) string {
	var out []string
	in := false
	for _, line := range strings.Split(df, "\n") {
		switch {
		case in:
			in = line != "NGINX_FORGE_EOF"
		case strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" || strings.HasPrefix(line, " "):
		default:
			out = append(out, strings.Fields(line)[0])
			in = strings.Contains(line, "<<'NGINX_FORGE_EOF'")
		}
	}
	return strings.Join(out, " ")
}
