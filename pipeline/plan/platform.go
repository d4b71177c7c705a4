package plan

import (
	"fmt"
	"slices"
	"strings"
)

// Platform is an OS/architecture pair, e.g. linux/amd64: the one form a platform takes below
// the command, which parses its flag into it (ParsePlatform, ParsePlatforms). The engines and
// the image writer convert it where they hand it on (to dagger.Platform, v1.Platform).
type Platform struct {
	OS   string
	Arch string
}

// String is the platform as flags, events, file names and the lock spell it ("linux/amd64").
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// DefaultPlatform is what a plan targets when no platform is given.
var DefaultPlatform = Platform{OS: "linux", Arch: "amd64"}

// supportedPlatforms are the platforms a plan targets, the default first.
var supportedPlatforms = []Platform{DefaultPlatform, {OS: "linux", Arch: "arm64"}}

// Supported are the platforms a plan targets, the default first (a copy).
func Supported() []Platform { return slices.Clone(supportedPlatforms) }

// SupportedList names supportedPlatforms for a message: "linux/amd64 or linux/arm64".
func SupportedList() string {
	names := make([]string, len(supportedPlatforms))
	for i, p := range supportedPlatforms {
		names[i] = p.String()
	}
	return strings.Join(names, " or ")
}

// ParsePlatform reads one platform ("linux/arm64"), which must be supported.
func ParsePlatform(s string) (Platform, error) {
	for _, p := range supportedPlatforms {
		if p.String() == s {
			return p, nil
		}
	}
	return Platform{}, fmt.Errorf("%q is not supported: give %s", s, SupportedList())
}

// ParsePlatforms reads a comma-separated list of platforms: each supported one at most once,
// and no empty entries (a list with 50 entries or ",," is a mistake to point out, not to
// build or trim). Its errors read after the list they are about (as the flag package
// prints them: invalid value "..." for flag -platform: names linux/amd64 twice: ...).
func ParsePlatforms(s string) ([]Platform, error) {
	fix := "give " + SupportedList() + ", or several once each, comma-separated"
	if strings.Trim(s, ", \t") == "" {
		return nil, fmt.Errorf("names no platform: %s", fix)
	}
	entries := strings.Split(s, ",")
	if len(entries) > len(supportedPlatforms) {
		return nil, fmt.Errorf("has %d entries, more than the %d supported platforms: %s", len(entries), len(supportedPlatforms), fix)
	}
	var out []Platform
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, fmt.Errorf("has an empty entry: %s", fix)
		}
		p, err := ParsePlatform(e)
		if err != nil {
			return nil, err
		}
		for _, seen := range out {
			if seen == p {
				return nil, fmt.Errorf("names %s twice: %s", p, fix)
			}
		}
		out = append(out, p)
	}
	return out, nil
}
