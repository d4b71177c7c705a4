package forge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// TLSChoices and ZlibChoices are the values of Request.TLS and Request.Zlib (--tls, --zlib).
var (
	TLSChoices  = flagNames(lock.TLSLibraries)
	ZlibChoices = flagNames(lock.ZlibLibraries)
)

func flagNames(components []string) []string {
	var out []string
	for _, c := range components {
		out = append(out, lock.FlagName(c))
	}
	return out
}

// loadLock is the request's lock: r.Lock, or the lock file, or (with TLS or Zlib and no lock
// file of its own) the shipped lock that has the libraries asked for; then the lock must
// have them. A LockFile given is always the lock used, whatever its spelling: whether one was
// given decides, not whether it names lock.DefaultPath. Every check here runs before
// anything is fetched.
func (r Request) loadLock() (*lock.Lock, bool, error) {
	for _, c := range []struct {
		flag, value string
		choices     []string
	}{{"--tls", r.TLS, TLSChoices}, {"--zlib", r.Zlib, ZlibChoices}} {
		if c.value != "" && !slices.Contains(c.choices, c.value) {
			return nil, false, fmt.Errorf("%s %q: use one of %s", c.flag, c.value, strings.Join(c.choices, ", "))
		}
	}
	l, builtin := r.Lock, false
	file := r.lockFile()
	if l == nil {
		if r.LockFile == "" && (r.TLS != "" || r.Zlib != "") {
			b, err := r.builtinFor()
			if err != nil {
				return nil, false, err
			}
			file = b.Path
		}
		var err error
		if l, builtin, err = LoadLock(file); err != nil {
			return nil, false, err
		}
	}
	for _, c := range []struct{ flag, value, have string }{{"--tls", r.TLS, l.TLS().Name}, {"--zlib", r.Zlib, l.ZlibLibrary().Name}} {
		if c.value != "" && lock.ComponentName(c.value) != c.have {
			return nil, false, fmt.Errorf("%s %s: the lock %s builds with %s; give a lock that pins %s (the shipped ones: %s), or drop %s", c.flag, c.value, file, lock.FlagName(c.have), c.value, builtinList(), c.flag)
		}
	}
	return l, builtin, nil
}

// builtinFor is the shipped lock with every library the request names.
func (r Request) builtinFor() (lock.Builtin, error) {
	for _, b := range lock.Builtins {
		if (r.TLS == "" || lock.ComponentName(r.TLS) == b.TLS) && (r.Zlib == "" || lock.ComponentName(r.Zlib) == b.Zlib) {
			return b, nil
		}
	}
	return lock.Builtin{}, fmt.Errorf("no shipped lock builds with --tls %s --zlib %s (the shipped ones: %s): write a lock with that pair (copy one, swap the component) and give it with --lock", orDefault(r.TLS, TLSChoices[0]), orDefault(r.Zlib, ZlibChoices[0]), builtinList())
}

func builtinList() string {
	var out []string
	for _, b := range lock.Builtins {
		out = append(out, fmt.Sprintf("%s (%s, %s)", b.Path, lock.FlagName(b.TLS), lock.FlagName(b.Zlib)))
	}
	return strings.Join(out, "; ")
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
