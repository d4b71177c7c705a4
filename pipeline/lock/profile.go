package lock

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Profile is a recorded PGO training profile (`ci pgo-profile`): the counters one training
// run of the plan's instrumented OpenSSL and nginx wrote, pinned like a source. A training
// counts a little differently each time it runs (timing, random handshakes), so a build that
// trains for itself is not reproducible; a build of `--optimize pgo` whose plan matches a
// recorded profile uses it instead of training, and then the same lock gives the same image.
type Profile struct {
	// Platform is the platform the profile was trained on and is used for ("linux/amd64").
	Platform string `json:"platform"`
	// Training identifies what was trained: the plan's training key (pipeline/plan:
	// TrainingKey), a digest of the sources, flags, modules, scripts and training workload
	// the instrumented stages are made of. A plan with another key cannot use this profile.
	Training string `json:"training"`
	// URL is where the profile tarball is fetched from: an https URL (--mirror applies as for
	// the components), or a path relative to the lock file's directory, for a profile kept in
	// the repository (ProfilesDir, "profiles/linux-amd64-<training>.tar.gz"). SHA256 pins it.
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
}

// profileSourcePrefix starts the name a recorded profile goes by among a plan's sources
// (Stage.Source.Component) and fetched files: "pgo-profile-amd64".
const profileSourcePrefix = "pgo-profile-"

// profileUnsigned is the reason a recorded profile has no signature: the SBOM and the build
// log print it like any unsigned component's.
const profileUnsigned = "a PGO profile recorded by `ci pgo-profile` from this lock's own sources: counters that steer the compiler's optimization, no code; pinned by its SHA-256 in the lock"

// Source returns the profile as a source: named profileSourcePrefix+arch, versioned by the
// start of its training key, fetched and verified by checksum like an unsigned component.
func (p Profile) Source() Component {
	_, arch, _ := strings.Cut(p.Platform, "/")
	v := p.Training
	if len(v) > 12 {
		v = v[:12]
	}
	return Component{Name: profileSourcePrefix + arch, Version: v, URL: p.URL, SHA256: p.SHA256, Unsigned: profileUnsigned}
}

// ProfilesDir is where a profile kept in the repository lives, relative to its lock file
// (pipeline/lock/profiles for the default lock); the lock's url is then
// "profiles/<file name>".
const ProfilesDir = "profiles"

// InRepo reports whether the profile is a file of the repository (a relative path in URL)
// rather than a download.
func (p Profile) InRepo() bool { return !strings.Contains(p.URL, "://") }

// Located returns the profile as a source with an in-repository path resolved against the
// directory of lockFile, as a file:// URL that pipeline/source reads and checks like a
// download. A downloaded profile is returned as Source gives it.
func (p Profile) Located(lockFile string) (Component, error) {
	c := p.Source()
	if !p.InRepo() {
		return c, nil
	}
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(lockFile), filepath.FromSlash(p.URL)))
	if err != nil {
		return Component{}, fmt.Errorf("profile %s: %w", p.URL, err)
	}
	c.URL = "file://" + abs
	return c, nil
}

// checkRepoPath accepts a clean relative path below the lock's directory that names a
// gzipped tarball.
func checkRepoPath(raw string) error {
	if raw == "" || path.IsAbs(raw) || path.Clean(raw) != raw || raw == ".." || strings.HasPrefix(raw, "../") ||
		strings.ContainsAny(raw, "\\\x00") || !strings.HasSuffix(raw, ".tar.gz") {
		return fmt.Errorf("%q is neither an https URL nor a clean relative path to a .tar.gz below the lock's directory (like %s/linux-amd64-<training>.tar.gz)", raw, ProfilesDir)
	}
	return nil
}

// FileName is the name the profile is stored and mirrored under: the last element of its URL.
func (p Profile) FileName() string { return path.Base(mustPath(p.URL)) }

// Profile returns the recorded profile for platform and training key.
func (l *Lock) Profile(platform, training string) (Profile, bool) {
	for _, p := range l.Profiles {
		if p.Platform == platform && p.Training == training {
			return p, true
		}
	}
	return Profile{}, false
}

// SetProfile adds p, replacing any profile recorded for the same platform: the lock keeps one
// profile per platform, the one for its current sources.
func (l *Lock) SetProfile(p Profile) {
	for i := range l.Profiles {
		if l.Profiles[i].Platform == p.Platform {
			l.Profiles[i] = p
			return
		}
	}
	l.Profiles = append(l.Profiles, p)
}

// Input returns what a plan stage names as its source (Stage.Source.Component): a component,
// or a recorded profile by its source name.
func (l *Lock) Input(name string) (Component, bool) {
	if c, ok := l.Component(name); ok {
		return c, true
	}
	for _, p := range l.Profiles {
		if s := p.Source(); s.Name == name {
			return s, true
		}
	}
	return Component{}, false
}

var (
	profilePlatformRE = regexp.MustCompile(`^linux/(amd64|arm64)$`)
	trainingKeyRE     = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

func (l *Lock) validateProfiles() error {
	seen := map[string]bool{}
	for i, p := range l.Profiles {
		f := fmt.Sprintf("profiles[%d]", i)
		if !profilePlatformRE.MatchString(p.Platform) {
			return &fieldError{f + ".platform", fmt.Sprintf("%q is not linux/amd64 or linux/arm64", p.Platform)}
		}
		if seen[p.Platform] {
			return &fieldError{f + ".platform", fmt.Sprintf("%s has a second profile: keep the one `ci pgo-profile` recorded last", p.Platform)}
		}
		seen[p.Platform] = true
		if !trainingKeyRE.MatchString(p.Training) {
			return &fieldError{f + ".training", fmt.Sprintf("%q is not the 64 lower-case hex digits `ci pgo-profile` prints", p.Training)}
		}
		if p.InRepo() {
			if err := checkRepoPath(p.URL); err != nil {
				return &fieldError{f + ".url", err.Error()}
			}
		} else if err := checkURL(p.URL); err != nil {
			return &fieldError{f + ".url", err.Error()}
		}
		if !sha256RE.MatchString(p.SHA256) {
			return &fieldError{f + ".sha256", fmt.Sprintf("%q is not 64 lower-case hex digits", p.SHA256)}
		}
	}
	return nil
}

// LocatedInput is Input with a profile kept in the repository resolved against lockFile's
// directory (Profile.Located): what a build fetches.
func (l *Lock) LocatedInput(name, lockFile string) (Component, bool, error) {
	for _, p := range l.Profiles {
		if p.Source().Name == name {
			c, err := p.Located(lockFile)
			return c, err == nil, err
		}
	}
	c, ok := l.Input(name)
	return c, ok, nil
}

// ProfileBySource returns the recorded profile whose source name (Profile.Source) is name.
func (l *Lock) ProfileBySource(name string) (Profile, bool) {
	for _, p := range l.Profiles {
		if p.Source().Name == name {
			return p, true
		}
	}
	return Profile{}, false
}
