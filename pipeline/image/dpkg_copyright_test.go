package image

import (
	"strings"
	"testing"
)

// Debian's licence names in License synopses become SPDX expressions: the GNU names with
// their versions (-only, or -or-later for "+"), the DEP-5 short names the SPDX list has,
// "and"/"or" as AND/OR, a comma grouping what precedes it, and anything else (a licence of
// the file's own, "public-domain", an exception SPDX does not list) a per-package LicenseRef.
func TestDEP5Expression(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"GPL-2+", "GPL-2.0-or-later"},
		{"GPL-2", "GPL-2.0-only"},
		{"LGPL-2.1+", "LGPL-2.1-or-later"},
		{"lgpl-3", "LGPL-3.0-only"},
		{"GFDL-1.3+", "GFDL-1.3-or-later"},
		{"Expat", "MIT"},
		{"BSD-3-clause", "BSD-3-Clause"},
		{"MPL-2.0", "MPL-2.0"},
		{"public-domain", "LicenseRef-pkg-public-domain"},
		{"LGPL-2.1+ and GPL-2", "LGPL-2.1-or-later AND GPL-2.0-only"},
		{"GPL-2+ or Artistic-2.0", "GPL-2.0-or-later OR Artistic-2.0"},
		{"GPL-2+ with OpenSSL exception", "LicenseRef-pkg-GPL-2plus-with-OpenSSL-exception"},
		{"GPL-2+ or Artistic-2.0, and BSD-3-clause", "(GPL-2.0-or-later OR Artistic-2.0) AND (BSD-3-Clause)"},
		{"GPL", "LicenseRef-pkg-GPL"}, // no version: which GPL is not said
	} {
		got := dep5Expression(tc.in, func(name string) string { return licenseRefID("pkg", name) })
		if got != tc.want {
			t.Errorf("%q -> %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A copyright file gives NOASSERTION only when it gives nothing usable: absent, not DEP-5,
// or DEP-5 without a licence; the comment says which. Otherwise every licence its Files
// paragraphs name, each once, with the texts of the licences SPDX does not list taken from
// its stand-alone License paragraphs ("." lines are empty lines), or a note that it has none.
func TestCopyrightLicense(t *testing.T) {
	const format = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
	for _, tc := range []struct {
		name, file, expr, comment string
		refs                      map[string]string
	}{
		{"absent", "", "NOASSERTION", "NOASSERTION: the image has no /usr/share/doc/p/copyright", nil},
		{"free-form", "This package was debianized by someone.\nLicense: GPL-2+\n", "NOASSERTION", "is not in Debian's machine-readable format (DEP-5)", nil},
		{"no licence", format + "Files: *\nCopyright: someone\n", "NOASSERTION", "is DEP-5 but names no licence", nil},
		{"DEP-5", format +
			"Files: *\nCopyright: A\nLicense: GPL-2+\n\n" +
			"Files: a/*\nLicense: GPL-2+ and ad-hoc\n\n" +
			"Files: b/*\nLicense: Expat or GPL-2\n\n" +
			"Files: c/*\nLicense: public-domain\n\n" +
			"License: ad-hoc\n Use it.\n .\n Really.\n",
			"GPL-2.0-or-later AND LicenseRef-p-ad-hoc AND (MIT OR GPL-2.0-only) AND LicenseRef-p-public-domain", "declared from /usr/share/doc/p/copyright (DEP-5)",
			map[string]string{"LicenseRef-p-ad-hoc": "Use it.\n\nReally.", "LicenseRef-p-public-domain": `The licence named "public-domain" in /usr/share/doc/p/copyright, which gives no text for it.`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var file []byte
			if tc.file != "" {
				file = []byte(tc.file)
			}
			got := copyrightLicense("p", file)
			if got.expr != tc.expr || !strings.Contains(got.comment, tc.comment) {
				t.Errorf("got %q (%s), want %q (%s)", got.expr, got.comment, tc.expr, tc.comment)
			}
			if len(got.refs) != len(tc.refs) {
				t.Errorf("%d LicenseRefs, want %d", len(got.refs), len(tc.refs))
			}
			for _, r := range got.refs {
				if want, ok := tc.refs[r.LicenseIdentifier]; !ok || r.ExtractedText != want {
					t.Errorf("%s text %q, want %q", r.LicenseIdentifier, r.ExtractedText, want)
				}
			}
		})
	}
}
