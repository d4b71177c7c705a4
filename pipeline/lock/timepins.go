package lock

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
