package lock

import "strings"

// SnapshotLayout is the time layout of Image.Snapshot: Ubuntu's snapshot ID.
const SnapshotLayout = "20060102T150405Z"

// PinnedInTime reports whether the builder is pinned by digest and installs its packages
// from a dated snapshot of the archive: without both, the same lock and flags can give
// another compiler, and so another digest, once the image tag or the archive moves.
func (l *Lock) PinnedInTime() bool {
	return l.Images.Builder.Digest != "" && l.Images.Builder.Snapshot != ""
}

// MissingTimePins names the builder pins PinnedInTime needs that l lacks, as lock fields.
func (l *Lock) MissingTimePins() []string {
	var out []string
	if l.Images.Builder.Digest == "" {
		out = append(out, "images.builder.digest")
	}
	if l.Images.Builder.Snapshot == "" {
		out = append(out, "images.builder.snapshot")
	}
	return out
}

// Followed is the image as its tag names it, for a tool built beside the build rather than
// into the image (the smoke client): the Ref when it has a tag of its own and the digest is
// pinned apart from it, else Pinned. A tag left to move costs such a tool nothing, and it
// keeps building where only the tag can be pulled (a registry mirror serving a stand-in
// under it); without a tag in the Ref there is nothing to follow but the digest.
func (i Image) Followed() string {
	if i.Digest == "" || strings.Contains(i.Ref, "@") || !strings.Contains(i.Ref[strings.LastIndex(i.Ref, "/")+1:], ":") {
		return i.Pinned()
	}
	return i.Ref
}
