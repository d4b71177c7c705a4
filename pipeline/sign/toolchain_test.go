package sign

import (
	"encoding/json"
	"strings"
	"testing"
)

// pinnedBuild is goldenBuild with its builder pinned in time and the toolchain its builder
// installed.
func pinnedBuild() Build {
	b := goldenBuild()
	b.Lock.BuilderSnapshot = "20261201T000000Z"
	b.Platforms[0].Toolchain = []NameVersion{{"gcc", "4:13.2.0-7ubuntu1"}, {"binutils", "2.42-4ubuntu2.5"}, {"libc6-dev", "2.39-0ubuntu8.6"}}
	return b
}

// TestProvenanceRecordsTheToolchain: the provenance of a build from a lock pinned in time
// states the archive snapshot among the lock's parameters (which ci rebuild compares), and
// the versions of the packages the builder installed, per platform, as internal parameters;
// a build without them records neither key.
func TestProvenanceRecordsTheToolchain(t *testing.T) {
	var p struct {
		BuildDefinition struct {
			ExternalParameters struct {
				Lock struct {
					Images map[string]string `json:"images"`
				} `json:"lock"`
			} `json:"externalParameters"`
			InternalParameters struct {
				Toolchain map[string]map[string]string `json:"toolchain"`
			} `json:"internalParameters"`
		} `json:"buildDefinition"`
	}
	if err := json.Unmarshal(predicateJSON(t, pinnedBuild()), &p); err != nil {
		t.Fatal(err)
	}
	if got := p.BuildDefinition.ExternalParameters.Lock.Images["builder_snapshot"]; got != "20261201T000000Z" {
		t.Errorf("lock.images.builder_snapshot = %q, want 20261201T000000Z", got)
	}
	tc := p.BuildDefinition.InternalParameters.Toolchain["linux/amd64"]
	if tc["gcc"] != "4:13.2.0-7ubuntu1" || tc["binutils"] != "2.42-4ubuntu2.5" || tc["libc6-dev"] != "2.39-0ubuntu8.6" || len(tc) != 3 {
		t.Errorf("internalParameters.toolchain[linux/amd64] = %v, want gcc, binutils and libc6-dev with their versions", tc)
	}
	if got := string(predicateJSON(t, goldenBuild())); strings.Contains(got, "builder_snapshot") || strings.Contains(got, "internalParameters") {
		t.Errorf("a build without a snapshot or toolchain records one:\n%s", got)
	}
}

// TestRebuildComparesTheSnapshot: ci rebuild's check refuses a checkout whose lock pins
// another archive snapshot, or none, than the provenance records, naming the field.
func TestRebuildComparesTheSnapshot(t *testing.T) {
	rec := Recorded{external: externalParameters(pinnedBuild())}
	for _, snap := range []string{"20261202T000000Z", ""} {
		b := pinnedBuild()
		b.Lock.BuilderSnapshot = snap
		err := rec.Check(b)
		if err == nil || !strings.Contains(err.Error(), "lock.images.builder_snapshot") {
			t.Errorf("snapshot %q against a record of 20261201T000000Z: err = %v, want the field named", snap, err)
		}
	}
}
