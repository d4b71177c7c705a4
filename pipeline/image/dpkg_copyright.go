package image

// The licences of the base's Debian packages, for the SBOM, read from the copyright file
// each package installs (usr/share/doc/<package>/copyright; distroless keeps them). Debian
// writes most of them in its machine-readable format (DEP-5, "Format:
// https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"): paragraphs of
// fields, the Files paragraphs each with a License field whose first line names the
// licence of those files ("GPL-2+", "LGPL-2.1+ and GPL-2", "public-domain"). This reads
// those names and turns each into an SPDX expression: Debian's short names that have an
// SPDX identifier become it (GPL-2+ is GPL-2.0-or-later, Expat is MIT); any other name (a
// licence of its own, "public-domain", a "with ... exception" SPDX does not list) becomes a
// LicenseRef whose text is the copyright file's own for that name. A file that is not DEP-5,
// or one that names no licence, gives NOASSERTION, and the package's licence comment says
// which of those it was.

import (
	"regexp"
	"strings"

	"github.com/spdx/tools-golang/spdx"
)

// debLicense is what one package's copyright file says about its licence.
type debLicense struct {
	// expr is the SPDX expression of every licence the file names, or NOASSERTION.
	expr string
	// comment says where expr came from and what it covers, or why it is NOASSERTION.
	comment string
	// refs define the LicenseRef- identifiers expr uses.
	refs []*spdx.OtherLicense
}

// copyrightPath is where a Debian package's copyright file is in a root file system.
func copyrightPath(pkg string) string { return "usr/share/doc/" + pkg + "/copyright" }

// isCopyrightFile says whether p is some package's copyright file, and whose.
func isCopyrightFile(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "usr/share/doc/")
	if !ok {
		return "", false
	}
	pkg, ok := strings.CutSuffix(rest, "/copyright")
	return pkg, ok && pkg != "" && !strings.Contains(pkg, "/")
}

// dep5Paragraph is one paragraph of a DEP-5 file: field name (lower case) -> value, the
// continuation lines joined with "\n" after the first line.
type dep5Paragraph map[string]string

// parseDEP5 splits a copyright file into paragraphs, or returns nil when it is not DEP-5
// (its first paragraph has no Format field naming the copyright format).
func parseDEP5(b []byte) []dep5Paragraph {
	var paras []dep5Paragraph
	cur, field := dep5Paragraph{}, ""
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, cur)
		}
		cur, field = dep5Paragraph{}, ""
	}
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			if t := strings.TrimSpace(line); field != "" && t == "." { // DEP-5's empty line
				cur[field] += "\n"
			} else if field != "" {
				cur[field] += "\n" + t
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				field = ""
				continue
			}
			field = strings.ToLower(strings.TrimSpace(k))
			cur[field] = strings.TrimSpace(v)
		}
	}
	flush()
	if len(paras) == 0 || !strings.Contains(paras[0]["format"], "copyright-format") && !strings.Contains(paras[0]["format"], "dep5") {
		return nil
	}
	return paras
}

// copyrightLicense reads pkg's copyright file (nil when the image has none).
func copyrightLicense(pkg string, file []byte) debLicense {
	where := "/" + copyrightPath(pkg)
	if file == nil {
		return debLicense{expr: "NOASSERTION", comment: "NOASSERTION: the image has no " + where}
	}
	paras := parseDEP5(file)
	if paras == nil {
		return debLicense{expr: "NOASSERTION", comment: "NOASSERTION: " + where + " is not in Debian's machine-readable format (DEP-5), so no licence is read from it; read the file"}
	}
	texts := map[string]string{} // licence name (lower case) -> its text in this file
	for _, p := range paras {
		if lic, ok := p["license"]; ok {
			name, text, _ := strings.Cut(lic, "\n")
			if key := strings.ToLower(strings.TrimSpace(name)); text != "" && texts[key] == "" {
				texts[key] = text
			}
		}
	}
	var terms []string
	seen := map[string]bool{}
	refs := map[string]*spdx.OtherLicense{}
	var order []string
	for i, p := range paras {
		lic, ok := p["license"]
		_, files := p["files"]
		if !ok || !files && i != 0 { // stand-alone License paragraphs only give texts
			continue
		}
		name, _, _ := strings.Cut(lic, "\n")
		expr := dep5Expression(strings.TrimSpace(name), func(term string) string {
			id := licenseRefID(pkg, term)
			if refs[id] == nil {
				text := texts[strings.ToLower(term)]
				if text == "" {
					text = "The licence named \"" + term + "\" in " + where + ", which gives no text for it."
				}
				refs[id] = &spdx.OtherLicense{LicenseIdentifier: id, LicenseName: term, ExtractedText: text,
					LicenseComment: "from " + where + " of the base image's Debian package " + pkg}
				order = append(order, id)
			}
			return id
		})
		// A conjunction adds its terms one by one: the package's licence is all of them.
		parts := []string{expr}
		if !strings.Contains(expr, " OR ") {
			parts = strings.Split(expr, " AND ")
		}
		for _, t := range parts {
			if t != "" && !seen[t] {
				seen[t] = true
				terms = append(terms, t)
			}
		}
	}
	if len(terms) == 0 {
		return debLicense{expr: "NOASSERTION", comment: "NOASSERTION: " + where + " is DEP-5 but names no licence"}
	}
	for i, t := range terms {
		if len(terms) > 1 && strings.Contains(t, " ") {
			terms[i] = "(" + t + ")"
		}
	}
	out := debLicense{expr: strings.Join(terms, " AND "),
		comment: "declared from " + where + " (DEP-5): every licence its Files paragraphs name, which covers the whole source package, so possibly files this binary package does not ship; not concluded"}
	for _, id := range order {
		out.refs = append(out.refs, refs[id])
	}
	return out
}

// dep5Expression turns a License synopsis into an SPDX expression: "and"/"or" become AND/OR,
// a comma groups what precedes it (DEP-5's way to say "(A or B), and C"), and each licence
// name becomes its SPDX identifier, or ref(name) when SPDX has none for it.
func dep5Expression(synopsis string, ref func(string) string) string {
	var out []string
	for gi, group := range strings.Split(synopsis, ",") {
		words := strings.Fields(group)
		var expr []string
		op := ""
		if gi > 0 && len(words) > 0 {
			if w := strings.ToLower(words[0]); w == "and" || w == "or" {
				op, words = strings.ToUpper(w), words[1:]
			} else {
				op = "AND"
			}
		}
		var term []string
		end := func() {
			if len(term) > 0 {
				expr = append(expr, spdxTerm(strings.Join(term, " "), ref))
				term = nil
			}
		}
		for _, w := range words {
			if lw := strings.ToLower(w); (lw == "and" || lw == "or") && len(term) > 0 && !strings.EqualFold(term[len(term)-1], "with") {
				end()
				expr = append(expr, strings.ToUpper(lw))
				continue
			}
			term = append(term, w)
		}
		end()
		if len(expr) == 0 {
			continue
		}
		g := strings.Join(expr, " ")
		if op == "" {
			out = append(out, g)
			continue
		}
		prev := strings.Join(out, " ")
		out = []string{"(" + prev + ") " + op + " (" + g + ")"}
	}
	return strings.Join(out, " ")
}

// spdxTerm is the SPDX identifier of one DEP-5 licence name.
func spdxTerm(name string, ref func(string) string) string {
	if id, ok := dep5Licenses[strings.ToLower(name)]; ok {
		return id
	}
	if m := gnuLicenseRE.FindStringSubmatch(name); m != nil {
		family, version := strings.ToUpper(m[1]), m[2]
		if !strings.Contains(version, ".") && family != "GFDL" {
			version += ".0"
		}
		if m[3] == "+" {
			return family + "-" + version + "-or-later"
		}
		return family + "-" + version + "-only"
	}
	return ref(name)
}

// gnuLicenseRE matches Debian's GNU licence names with a version: GPL-2, GPL-2+, LGPL-2.1+,
// AGPL-3, GFDL-1.3+ (the SPDX list has each as -only and -or-later).
var gnuLicenseRE = regexp.MustCompile(`(?i)^(GPL|LGPL|AGPL|GFDL)-(1|2|2\.1|3|1\.1|1\.2|1\.3)(\+?)$`)

// dep5Licenses are the DEP-5 short names (lower case) that are, or map to, an identifier of
// the SPDX license list.
var dep5Licenses = map[string]string{
	"apache-1.0": "Apache-1.0", "apache-1.1": "Apache-1.1", "apache-2.0": "Apache-2.0",
	"artistic-2.0": "Artistic-2.0", "bsd-2-clause": "BSD-2-Clause", "bsd-3-clause": "BSD-3-Clause",
	"bsd-4-clause": "BSD-4-Clause", "0bsd": "0BSD", "isc": "ISC", "expat": "MIT", "mit": "MIT",
	"zlib": "Zlib", "mpl-1.1": "MPL-1.1", "mpl-2.0": "MPL-2.0", "cc0-1.0": "CC0-1.0",
	"fsfap": "FSFAP", "fsful": "FSFUL", "fsfullr": "FSFULLR", "bsl-1.0": "BSL-1.0",
	"openssl": "OpenSSL", "x11": "X11", "unicode-dfs-2016": "Unicode-DFS-2016",
	"cc-by-4.0": "CC-BY-4.0", "cc-by-sa-4.0": "CC-BY-SA-4.0", "cc-by-3.0": "CC-BY-3.0",
	"cc-by-sa-3.0": "CC-BY-SA-3.0", "python-2.0": "Python-2.0", "w3c": "W3C",
}

// licenseRefChars are what a LicenseRef idstring may not hold (letters, digits, '.', '-').
var licenseRefChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// licenseRefID names a licence SPDX does not list, per package: two packages' "ad-hoc" or
// "public-domain" are different texts.
func licenseRefID(pkg, name string) string {
	name = strings.ReplaceAll(name, "+", "plus")
	return "LicenseRef-" + strings.Trim(licenseRefChars.ReplaceAllString(pkg+"-"+name, "-"), "-")
}
