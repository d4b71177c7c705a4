// Package advisory owns the security advisories of the components a lock pins, as data: the
// reviewed snapshot (advisories.json in this directory, embedded, changed only through a
// reviewed pull request like the signer keys in pipeline/lock/keys), strict readers of
// upstream's own formats (nginx.org's security_advisories.xml; OpenSSL's CVE JSON 5 records),
// version-range matching, and which advisories affect a lock.
//
// `ci build` reads the snapshot offline before anything is fetched (pipeline/forge); `ci
// check-updates` refreshes it from the feeds and writes it only through the update's pull
// request (pipeline/upstream).
package advisory

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
)

// DefaultPath is the reviewed snapshot in a checkout; a program run elsewhere uses the copy
// embedded in it (Load).
const DefaultPath = "pipeline/advisory/advisories.json"

// maxSnapshotSize bounds a snapshot file: the reviewed one is tens of KiB.
const maxSnapshotSize = 4 << 20

//go:embed advisories.json
var embedded []byte

// Snapshot is the reviewed set of advisories: per feed where it came from and when, and the
// advisories themselves.
type Snapshot struct {
	Schema     int             `json:"schema"`
	Feeds      map[string]Feed `json:"feeds"`
	Advisories []Advisory      `json:"advisories"`
}

// Feed says where one component's advisories came from.
type Feed struct {
	URL string `json:"url"`
	// Checked is the date (YYYY-MM-DD) the feed was last read into this snapshot.
	Checked string `json:"checked"`
	// Source names the upstream file and revision read, for a reviewer.
	Source string `json:"source"`
}

// Advisory is one upstream advisory for one component.
type Advisory struct {
	Component string `json:"component"`
	ID        string `json:"id"` // CVE-YYYY-N
	// Severity is upstream's own word (nginx: none, minor, low, medium, major; OpenSSL: Low,
	// Moderate, High, Critical), verbatim.
	Severity string `json:"severity"`
	// ReviewedSeverity, when set, replaces Severity for every decision here (a public
	// exploit upstream's rating predates); Review says why. A refresh keeps both.
	ReviewedSeverity string `json:"reviewed_severity,omitempty"`
	Review           string `json:"review,omitempty"`
	Summary          string `json:"summary"`
	URL              string `json:"url"`
	// Affected are the version ranges upstream lists as vulnerable.
	Affected []Range `json:"affected"`
	// Fixed are the first fixed releases, one per branch, as upstream lists them (nginx's
	// "1.31.0+, 1.30.1+"; OpenSSL's lessThan bounds).
	Fixed []string `json:"fixed"`
	// Source is where this entry was read (feed and revision, or a page for a manual entry).
	Source string `json:"source"`
	// Unknown says which fields upstream does not state, when any.
	Unknown string `json:"unknown,omitempty"`
}

// Range is an inclusive From..To (nginx's "0.6.27-1.30.0") or From up to, not including,
// Before (OpenSSL's version/lessThan).
type Range struct {
	From   string `json:"from"`
	To     string `json:"to,omitempty"`
	Before string `json:"before,omitempty"`
}

// Level is a severity on one scale for both upstreams.
type Level int

const (
	levelNone Level = iota
	levelLow
	levelMedium
	LevelHigh
	levelCritical
)

func (l Level) String() string {
	return [...]string{"none", "low", "medium", "high", "critical"}[l]
}

// levels maps each upstream's words onto Level: nginx's "major" is its highest word and
// reads as high; OpenSSL's Moderate as medium.
var levels = map[string]map[string]Level{
	"nginx":   {"none": levelNone, "minor": levelLow, "low": levelLow, "medium": levelMedium, "major": LevelHigh},
	"openssl": {"low": levelLow, "moderate": levelMedium, "high": LevelHigh, "critical": levelCritical},
}

// components are the components whose advisories the snapshot holds.
func components() []string { return []string{"nginx", "openssl"} }

// Level is the advisory's severity on the common scale: ReviewedSeverity when set.
func (a Advisory) Level() Level {
	s := a.Severity
	if a.ReviewedSeverity != "" {
		s = a.ReviewedSeverity
	}
	return levels[a.Component][strings.ToLower(s)]
}

// EffectiveSeverity is the severity word decisions use, with upstream's when reviewed
// otherwise: "major (reviewed; nginx.org: medium)".
func (a Advisory) EffectiveSeverity() string {
	if a.ReviewedSeverity != "" && !strings.EqualFold(a.ReviewedSeverity, a.Severity) {
		return fmt.Sprintf("%s (reviewed; upstream: %s)", a.ReviewedSeverity, a.Severity)
	}
	return a.Severity
}

var cveRE = regexp.MustCompile(`^CVE-[0-9]{4}-[0-9]{4,7}$`)

// Load reads the snapshot at path; DefaultPath falls back to the embedded snapshot when the
// file is absent (a program run outside a checkout).
func Load(path string) (*Snapshot, error) {
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) && path == DefaultPath {
		return embeddedSnapshot(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading advisories %s: %w", path, err)
	}
	s, err := parseSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("advisories %s: %w (fix the file, or restore it with git checkout %s)", path, err, path)
	}
	return s, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSnapshotSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSnapshotSize {
		return nil, fmt.Errorf("larger than %d bytes: not a snapshot of advisories", maxSnapshotSize)
	}
	return data, nil
}

// embeddedSnapshot is the reviewed snapshot built into the program.
func embeddedSnapshot() *Snapshot {
	s, err := parseSnapshot(embedded)
	if err != nil {
		// advisory_test.go parses it; a program with a broken one must not build images.
		panic("the embedded advisories.json is invalid: " + err.Error())
	}
	return s
}

// parseSnapshot reads a snapshot strictly: unknown fields, unknown components and severities,
// malformed IDs and version ranges are errors.
func parseSnapshot(data []byte) (*Snapshot, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	if dec.More() {
		return nil, errors.New("parsing: data after the snapshot")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks every entry.
func (s *Snapshot) Validate() error {
	if s.Schema != 1 {
		return fmt.Errorf("schema %d: this program reads schema 1", s.Schema)
	}
	seen := map[string]bool{}
	for i, a := range s.Advisories {
		if err := a.validate(); err != nil {
			return fmt.Errorf("advisory %d (%s %s): %w", i, a.Component, a.ID, err)
		}
		key := a.Component + " " + a.ID
		if seen[key] {
			return fmt.Errorf("advisory %d: %s listed twice", i, key)
		}
		seen[key] = true
		if _, ok := s.Feeds[a.Component]; !ok {
			return fmt.Errorf("advisory %d (%s): no feed recorded for %s", i, a.ID, a.Component)
		}
	}
	return nil
}

func (a Advisory) validate() error {
	words, ok := levels[a.Component]
	switch {
	case !ok:
		return fmt.Errorf("component %q: advisories are kept for %s", a.Component, strings.Join(components(), ", "))
	case !cveRE.MatchString(a.ID):
		return fmt.Errorf("id %q is not CVE-YYYY-NNNN", a.ID)
	case a.Summary == "" || a.Source == "":
		return errors.New("summary and source are required (say where the entry came from)")
	case a.URL != "" && !strings.HasPrefix(a.URL, "https://"):
		return fmt.Errorf("url %q: give an https URL", a.URL)
	case len(a.Affected) == 0:
		return errors.New("no affected range")
	case a.ReviewedSeverity != "" && a.Review == "":
		return errors.New("reviewed_severity needs a review saying why")
	}
	for _, s := range []string{a.Severity, a.ReviewedSeverity} {
		if _, ok := words[strings.ToLower(s)]; !ok && s != "" {
			return fmt.Errorf("severity %q is not one of %s's words", s, a.Component)
		}
	}
	if a.Severity == "" {
		return errors.New("severity is required")
	}
	for _, r := range a.Affected {
		if err := r.validate(); err != nil {
			return err
		}
	}
	for _, f := range a.Fixed {
		if _, err := parseVersion(f); err != nil {
			return fmt.Errorf("fixed %w", err)
		}
	}
	return nil
}

// Write returns the snapshot as its file holds it: sorted (component, then newest ID
// first), indented, with a final newline, so a refresh's diff is what changed.
func (s *Snapshot) Write() ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	cp := *s
	cp.Advisories = slices.Clone(s.Advisories)
	slices.SortStableFunc(cp.Advisories, func(a, b Advisory) int {
		if c := strings.Compare(a.Component, b.Component); c != 0 {
			return c
		}
		return compareIDs(b.ID, a.ID)
	})
	out, err := json.MarshalIndent(&cp, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// compareIDs orders CVE IDs by year, then number.
func compareIDs(a, b string) int {
	pa, pb := strings.Split(a, "-"), strings.Split(b, "-")
	if len(pa) == 3 && len(pb) == 3 {
		if c := cmpNum(pa[1], pb[1]); c != 0 {
			return c
		}
		return cmpNum(pa[2], pb[2])
	}
	return strings.Compare(a, b)
}

func cmpNum(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}
