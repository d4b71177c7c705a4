package image

import (
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// Record is what an image assembled here says it was built from: the version of each
// component nginx was built from and the modules compiled in, read back from its
// annotations (Assemble writes them to the manifest and, the same, to the config's labels).
type Record struct {
	// Versions maps a lock component's name to its version (dev.nginx-forge.<name>.version).
	Versions map[string]string
	// Modules are the modules by plan.Module name (AnnotationModules); nil when the image
	// does not record them (assembled before the annotation existed, or not by this tool).
	Modules []string
}

// ReadRecord reads img's record: from its manifest's annotations, else its config's labels
// (a registry or tool that dropped the manifest's annotations keeps the config). ok is
// false when img records nothing of this tool's (built by a Dockerfile, or elsewhere).
func ReadRecord(img v1.Image) (rec Record, ok bool, err error) {
	m, err := img.Manifest()
	if err != nil {
		return Record{}, false, fmt.Errorf("reading the image manifest: %w", err)
	}
	anns := m.Annotations
	if !hasRecord(anns) {
		cf, err := img.ConfigFile()
		if err != nil {
			return Record{}, false, fmt.Errorf("reading the image config: %w", err)
		}
		anns = cf.Config.Labels
	}
	if !hasRecord(anns) {
		return Record{}, false, nil
	}
	rec.Versions = map[string]string{}
	for k, v := range anns {
		name, ok := strings.CutPrefix(k, AnnotationPrefix)
		if !ok {
			continue
		}
		if c, ok := strings.CutSuffix(name, ".version"); ok && c != Libcrypt {
			rec.Versions[c] = v
		}
	}
	if mods, ok := anns[AnnotationModules]; ok {
		rec.Modules = []string{}
		for _, m := range strings.Split(mods, ",") {
			if m = strings.TrimSpace(m); m != "" {
				rec.Modules = append(rec.Modules, m)
			}
		}
	}
	return rec, true, nil
}

// hasRecord is true when anns hold at least nginx's version, which every image Assemble
// writes records.
func hasRecord(anns map[string]string) bool {
	return anns[AnnotationPrefix+lock.Nginx+".version"] != ""
}
