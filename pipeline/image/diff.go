package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Difference is where two images that should be the same first differ, in the order a
// person looks for the cause: the manifest's layers in order, then, inside the first layer
// that differs, the first file (tar order) and how it differs; or the config when every
// layer is the same.
type Difference struct {
	// Layer is the 1-based index of the first differing layer (0: the layers are the same,
	// the config differs). Layers is how many each image has.
	Layer, Layers int
	// Path is the first entry of that layer that differs ("" when the layer counts differ or
	// the config does); Field is how: "content", "mode", "mtime", "owner", "type", "link
	// target", "size", "only in the published image", "only in the rebuilt image", or the
	// config field that differs.
	Path, Field string
	// Published and Rebuilt are that field's values in each image, as text.
	Published, Rebuilt string
}

func (d Difference) String() string {
	switch {
	case d.Layer == 0:
		return fmt.Sprintf("the layers are the same; the config differs in %s (published %s, rebuilt %s)", d.Field, d.Published, d.Rebuilt)
	case d.Path == "":
		return fmt.Sprintf("layer %d of %d: %s differs (published %s, rebuilt %s)", d.Layer, d.Layers, d.Field, d.Published, d.Rebuilt)
	case d.Published == "" && d.Rebuilt == "":
		return fmt.Sprintf("layer %d of %d, file %s: %s", d.Layer, d.Layers, d.Path, d.Field)
	}
	return fmt.Sprintf("layer %d of %d, file %s: %s differs (published %s, rebuilt %s)", d.Layer, d.Layers, d.Path, d.Field, d.Published, d.Rebuilt)
}

// diffMaxEntries and diffMaxEntryBytes bound what FirstDifference reads of a layer it does
// not trust (a registry's): an install tree holds some hundreds of files, a distroless base
// some thousands, none near a gigabyte.
const (
	diffMaxEntries    = 200_000
	diffMaxEntryBytes = 1 << 30
)

// FirstDifference compares published with rebuilt and returns where they first differ;
// ok is false when their manifests' layers and configs are the same.
func FirstDifference(published, rebuilt v1.Image) (Difference, bool, error) {
	pl, err := published.Layers()
	if err != nil {
		return Difference{}, false, fmt.Errorf("the published image's layers: %w", err)
	}
	rl, err := rebuilt.Layers()
	if err != nil {
		return Difference{}, false, fmt.Errorf("the rebuilt image's layers: %w", err)
	}
	for i := 0; i < min(len(pl), len(rl)); i++ {
		pd, err := pl[i].DiffID()
		if err != nil {
			return Difference{}, false, fmt.Errorf("the published image's layer %d: %w", i+1, err)
		}
		rd, err := rl[i].DiffID()
		if err != nil {
			return Difference{}, false, fmt.Errorf("the rebuilt image's layer %d: %w", i+1, err)
		}
		if pd == rd {
			continue
		}
		d, err := firstEntryDifference(pl[i], rl[i])
		if err != nil {
			return Difference{}, false, fmt.Errorf("layer %d: %w", i+1, err)
		}
		d.Layer, d.Layers = i+1, len(pl)
		if d.Field == "" {
			// Same entries, different bytes: the tar stream itself (its order, headers
			// tar does not show, padding).
			d.Field, d.Published, d.Rebuilt = "tar stream (same entries)", pd.String(), rd.String()
		}
		return d, true, nil
	}
	if len(pl) != len(rl) {
		n := min(len(pl), len(rl)) + 1
		return Difference{Layer: n, Layers: len(pl), Field: "layer count", Published: fmt.Sprint(len(pl)), Rebuilt: fmt.Sprint(len(rl))}, true, nil
	}
	pc, err := published.RawConfigFile()
	if err != nil {
		return Difference{}, false, fmt.Errorf("the published image's config: %w", err)
	}
	rc, err := rebuilt.RawConfigFile()
	if err != nil {
		return Difference{}, false, fmt.Errorf("the rebuilt image's config: %w", err)
	}
	if !bytes.Equal(pc, rc) {
		field, p, r := configDifference(published, rebuilt)
		return Difference{Field: field, Published: p, Rebuilt: r}, true, nil
	}
	pm, err := published.RawManifest()
	if err != nil {
		return Difference{}, false, fmt.Errorf("the published image's manifest: %w", err)
	}
	rm, err := rebuilt.RawManifest()
	if err != nil {
		return Difference{}, false, fmt.Errorf("the rebuilt image's manifest: %w", err)
	}
	if !bytes.Equal(pm, rm) {
		// Same layers' contents and config, other manifest: the compressed layers (the
		// compressor or its level) or the annotations and media types.
		return Difference{Field: "manifest (compressed layers, media types or annotations)", Published: sha256Of(pm), Rebuilt: sha256Of(rm)}, true, nil
	}
	return Difference{}, false, nil
}

func sha256Of(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

// configDifference names the first config field that differs.
func configDifference(published, rebuilt v1.Image) (string, string, string) {
	p, perr := published.ConfigFile()
	r, rerr := rebuilt.ConfigFile()
	if perr != nil || rerr != nil {
		return "config", "unreadable", "unreadable"
	}
	fields := []struct {
		name string
		p, r any
	}{
		{"created", p.Created.UTC(), r.Created.UTC()},
		{"architecture", p.Architecture, r.Architecture},
		{"os", p.OS, r.OS},
		{"variant", p.Variant, r.Variant},
		{"config.Labels", p.Config.Labels, r.Config.Labels},
		{"config.Env", p.Config.Env, r.Config.Env},
		{"config.Entrypoint", p.Config.Entrypoint, r.Config.Entrypoint},
		{"config.Cmd", p.Config.Cmd, r.Config.Cmd},
		{"config.User", p.Config.User, r.Config.User},
		{"config.ExposedPorts", p.Config.ExposedPorts, r.Config.ExposedPorts},
		{"config.StopSignal", p.Config.StopSignal, r.Config.StopSignal},
		{"history", p.History, r.History},
	}
	for _, f := range fields {
		if ps, rs := fmt.Sprint(f.p), fmt.Sprint(f.r); ps != rs {
			return f.name, ps, rs
		}
	}
	return "config (a field not compared by name)", "", ""
}

// entry is what a layer says of one path.
type entry struct {
	typ          byte
	mode         int64
	uid, gid     int
	mtime        int64
	size         int64
	link, digest string
}

// firstEntryDifference reads both layers whole (bounded) and returns the first path, in
// the published layer's order, whose entry differs, or that one of them lacks.
func firstEntryDifference(published, rebuilt v1.Layer) (Difference, error) {
	porder, pe, err := layerEntryMap(published)
	if err != nil {
		return Difference{}, fmt.Errorf("the published image's: %w", err)
	}
	rorder, re, err := layerEntryMap(rebuilt)
	if err != nil {
		return Difference{}, fmt.Errorf("the rebuilt image's: %w", err)
	}
	for _, p := range porder {
		r, ok := re[p]
		if !ok {
			return Difference{Path: p, Field: "only in the published image"}, nil
		}
		if d, ok := entryDifference(pe[p], r); ok {
			d.Path = p
			return d, nil
		}
	}
	for _, p := range rorder {
		if _, ok := pe[p]; !ok {
			return Difference{Path: p, Field: "only in the rebuilt image"}, nil
		}
	}
	return Difference{}, nil
}

func entryDifference(p, r entry) (Difference, bool) {
	switch {
	case p.typ != r.typ:
		return Difference{Field: "type", Published: string(p.typ), Rebuilt: string(r.typ)}, true
	case p.digest != r.digest || p.size != r.size:
		return Difference{Field: "content", Published: fmt.Sprintf("%d bytes %s", p.size, p.digest), Rebuilt: fmt.Sprintf("%d bytes %s", r.size, r.digest)}, true
	case p.link != r.link:
		return Difference{Field: "link target", Published: p.link, Rebuilt: r.link}, true
	case p.mode != r.mode:
		return Difference{Field: "mode", Published: fmt.Sprintf("%04o", p.mode), Rebuilt: fmt.Sprintf("%04o", r.mode)}, true
	case p.uid != r.uid || p.gid != r.gid:
		return Difference{Field: "owner", Published: fmt.Sprintf("%d:%d", p.uid, p.gid), Rebuilt: fmt.Sprintf("%d:%d", r.uid, r.gid)}, true
	case p.mtime != r.mtime:
		return Difference{Field: "mtime", Published: fmt.Sprint(p.mtime), Rebuilt: fmt.Sprint(r.mtime)}, true
	}
	return Difference{}, false
}

var errTooManyEntries = errors.New("layer has too many entries to compare")

// layerEntryMap is the layer's entries by path, and the paths in the layer's order.
func layerEntryMap(l v1.Layer) ([]string, map[string]entry, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var order []string
	m := map[string]entry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading the layer: %w", err)
		}
		if len(order) >= diffMaxEntries {
			return nil, nil, fmt.Errorf("%w (over %d)", errTooManyEntries, diffMaxEntries)
		}
		name := "/" + strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
		e := entry{typ: h.Typeflag, mode: h.Mode, uid: h.Uid, gid: h.Gid, mtime: h.ModTime.Unix(), size: h.Size, link: h.Linkname}
		if h.Typeflag == tar.TypeReg {
			if h.Size > diffMaxEntryBytes {
				return nil, nil, fmt.Errorf("%s: %d bytes, over the %d this comparison reads", name, h.Size, diffMaxEntryBytes)
			}
			s := sha256.New()
			if _, err := io.Copy(s, io.LimitReader(tr, diffMaxEntryBytes)); err != nil {
				return nil, nil, fmt.Errorf("reading %s: %w", name, err)
			}
			e.digest = fmt.Sprintf("sha256:%x", s.Sum(nil))
		}
		if _, dup := m[name]; !dup {
			order = append(order, name)
		}
		m[name] = e
	}
	return order, m, nil
}
