package upstream

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// PRBody is the Markdown body of the update pull request: for each change Apply made, exactly
// what was verified before it entered the lock (`ci check-updates --pr-body FILE` writes it,
// update.yml hands it to the pull-request job). Nothing is claimed that was not checked: a
// component without a signature says so, with the lock's reason.
func PRBody(applied []Applied, refused []Refusal, warnings []string) string {
	var b strings.Builder
	b.WriteString("`go run ./ci check-updates --write` verified every change below before writing it into the lock; " +
		"a release or image failing any check is left as it was and listed under Refused. The pull request's build and smoke test decide whether it lands.\n")
	for _, a := range applied {
		if a.IsImage() || a.DroppedProfile != "" {
			continue
		}
		fmt.Fprintf(&b, "\n### %s %s → %s\n\n", a.Name, a.Old, a.New)
		b.WriteString("| check | result |\n|---|---|\n")
		if a.Git != nil {
			writeGitComponent(&b, a)
		} else {
			writeTarballComponent(&b, a)
		}
	}
	var keys, refreshed []Applied
	for _, a := range applied {
		switch {
		case a.RefreshedKey:
			refreshed = append(refreshed, a)
		case a.NewKey != nil:
			keys = append(keys, a)
		}
	}
	writeKeys(&b, refreshed, "Refreshed signer keys: review these keys",
		"Each key is vendored already, but its vendored copy said it had expired before upstream signed the new release. "+
			"A current copy was fetched: its primary fingerprint is exactly the vendored one and every self-signature verified, "+
			"and upstream has since extended the key's life by re-signing it. The release verified with it, and this pull request "+
			"replaces the file. Check the new expiry against upstream's own publication before merging.")
	writeKeys(&b, keys, "New signer keys: review these keys",
		"Each key's fingerprint was already pinned in the lock, but the key itself was not in the repository. "+
			"It was fetched, its primary fingerprint checked to be exactly the pinned one and every self-signature verified, "+
			"and this pull request adds it, so that builds of this lock never need a key server. "+
			"Check the fingerprint against upstream's own publication before merging.")
	if len(refused) > 0 {
		b.WriteString("\n### Refused (not in this pull request)\n\n| component | release | why | to resolve |\n|---|---|---|---|\n")
		for _, r := range refused {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Name, orLookupFailed(r.Target), escapeCell(r.Err.Error()), escapeCell(r.Fix))
		}
	}
	var images []Applied
	for _, a := range applied {
		if a.IsImage() {
			images = append(images, a)
		}
	}
	if len(images) > 0 {
		b.WriteString("\n### Base images\n\n| image | tag | digest (index) | platforms |\n|---|---|---|---|\n")
		for _, a := range images {
			fmt.Fprintf(&b, "| %s | `%s` | `%s` → `%s` | %s |\n", a.Name, a.Ref, orNoneDigest(a.Old), a.New, strings.Join(a.Platforms, ", "))
		}
		for _, a := range images {
			if a.Snapshot != "" {
				fmt.Fprintf(&b, "\nThe builder's archive snapshot: `%s` → `%s`. The builder installs its packages (the compiler, binutils, libc headers) "+
					"from the distribution's archive as it was at that moment (apt's `APT::Snapshot`), so the new toolchain is what this pull request's build installs, and an older lock keeps installing its own.\n",
					orNoneDigest(a.OldSnapshot), a.Snapshot)
			}
		}
	}
	var dropped []string
	for _, a := range applied {
		if a.DroppedProfile != "" {
			dropped = append(dropped, fmt.Sprintf("%s (training %.12s)", a.DroppedProfile, a.Old))
		}
	}
	if len(dropped) > 0 {
		fmt.Fprintf(&b, "\n### PGO profiles\n\nRemoved from the lock: %s. They were trained on the sources or builder this update replaces, "+
			"so builds of this lock use no PGO (`--optimize auto`) until `go run ./ci pgo-profile --url BASE --write` records a new profile and it is served at its URL.\n", strings.Join(dropped, ", "))
	}
	if len(warnings) > 0 {
		b.WriteString("\n### Warnings\n\n")
		for _, w := range warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	return b.String()
}

func orNoneDigest(s string) string {
	if s == "" {
		return "(none pinned)"
	}
	return s
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func orLookupFailed(s string) string {
	if s == "" {
		return "(lookup failed)"
	}
	return s
}

// writeKeys is a section listing the signer keys that applied writes (NewKey), if any.
func writeKeys(b *strings.Builder, applied []Applied, heading, intro string) {
	if len(applied) == 0 {
		return
	}
	fmt.Fprintf(b, "\n### %s\n\n%s\n\n| file | fingerprint | user IDs | expires | fetched from | signed |\n|---|---|---|---|---|---|\n", heading, intro)
	for _, a := range applied {
		k := a.NewKey
		fmt.Fprintf(b, "| `%s/%s.asc` | `%s` | %s | %s | %s | %s %s |\n", lock.KeysDir, k.Fingerprint, k.Fingerprint,
			escapeCell(strings.Join(k.UserIDs, "; ")), k.Expires, escapeCell(k.Source), a.Name, a.New)
	}
}

// writeTarballComponent is the table rows of a tarball component's change.
func writeTarballComponent(b *strings.Builder, a Applied) {
	fmt.Fprintf(b, "| tarball | %s |\n", a.URL)
	fmt.Fprintf(b, "| sha256 | `%s` (of the downloaded file, written into the lock) |\n", a.SHA256)
	if a.Signed {
		fmt.Fprintf(b, "| signature file | %s |\n", a.SignatureURL)
		where := "**not vendored**"
		switch {
		case a.RefreshedKey:
			where = fmt.Sprintf("vendored; its vendored copy said it had expired before this release was signed, and this pull request refreshes it (`%s/%s.asc`, see Refreshed signer keys)", lock.KeysDir, a.SignedBy)
		case a.NewKey != nil:
			where = fmt.Sprintf("pinned in the lock; its key is vendored by this pull request (`%s/%s.asc`, see New signer keys)", lock.KeysDir, a.SignedBy)
		case a.SignerVendored:
			where = fmt.Sprintf("vendored (`%s/%s.asc`)", lock.KeysDir, a.SignedBy)
		}
		fmt.Fprintf(b, "| signer | `%s`, %s |\n", a.SignedBy, where)
		locked := fmt.Sprintf("the locked %s had no signature to compare with", a.Old)
		if !a.LockedSignedAt.IsZero() {
			locked = fmt.Sprintf("not older than the locked %s's, %s", a.Old, a.LockedSignedAt.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(b, "| signature date | %s (%s) |\n", a.SignedAt.UTC().Format(time.RFC3339), locked)
		if a.GainedSignature {
			b.WriteString("| lock | the component had no signature (`unsigned`); upstream signs this release, so the lock now pins its signer and the `unsigned` reason is removed |\n")
		}
	} else {
		fmt.Fprintf(b, "| signature | **none**: the checksum rests on %s; the lock says why: %s |\n", escapeCell(a.Download()), escapeCell(a.Unsigned))
		if a.NoSignatureAt != "" {
			fmt.Fprintf(b, "| signature lookup | nothing published at %s, so the component stays unsigned |\n", a.NoSignatureAt)
		} else {
			fmt.Fprintf(b, "| signature lookup | none: %s's upstream publishes no signatures, so the component stays unsigned |\n", a.Name)
		}
	}
	fmt.Fprintf(b, "| top directory | `%s/` (matches the version) |\n", a.TopDir)
}

// writeGitComponent is the table rows of a change to a component pinned by git commit: the
// tag, commit and tree instead of a tarball and its checksum, and how the tree was verified.
func writeGitComponent(b *strings.Builder, a Applied) {
	g := a.Git
	fmt.Fprintf(b, "| repository | %s |\n", g.Repository)
	oldTag := ""
	if a.OldGit != nil && a.OldGit.Tag != "" {
		oldTag = "`" + a.OldGit.Tag + "` → "
	}
	fmt.Fprintf(b, "| tag | %s`%s` (GitHub's tag list; resolved with its git database API) |\n", oldTag, g.Tag)
	fmt.Fprintf(b, "| commit | `%s` (what the tag points at, written into the lock) |\n", g.Commit)
	how := "the source cache holds an archive whose files hash to this tree; the commit itself was not fetched, its ID is GitHub's answer"
	switch {
	case a.FetchedFrom == g.Repository:
		how = fmt.Sprintf("the commit was fetched from %s with git, which checks every object against its ID, and its tree is this one", g.Repository)
	case a.FetchedFrom != "":
		how = fmt.Sprintf("the mirror's archive %s: its files hash to this tree; the commit itself was not fetched, its ID is GitHub's answer", a.FetchedFrom)
	}
	fmt.Fprintf(b, "| tree | `%s` (the commit's tree; %s) |\n", g.Tree, escapeCell(how))
	fmt.Fprintf(b, "| signature | **none**: the source is pinned by commit and tree; the lock says why: %s |\n", escapeCell(a.Unsigned))
	if a.UnsignedWas != "" {
		fmt.Fprintf(b, "| unsigned reason | rewritten for the new pin (the locked tag and version replaced by the new ones); it was: %s |\n", escapeCell(a.UnsignedWas))
	}
}

// Download says what an unsigned tarball's checksum rests on: "the HTTPS download from
// HOST alone", "the plain-HTTP download from HOST alone, which ..." (a mirror given as
// http://, with no transport security), or the source cache.
func (a Applied) Download() string {
	u, err := url.Parse(a.FetchedFrom)
	switch {
	case a.FetchedFrom == "":
		return "the download that filled the source cache alone"
	case err == nil && strings.EqualFold(u.Scheme, "https"):
		return "the HTTPS download from " + u.Host + " alone"
	case err == nil && strings.EqualFold(u.Scheme, "http"):
		return "the plain-HTTP download from " + u.Host + " alone, which has no transport security (anyone on the path could have altered it)"
	}
	return "the download from " + a.FetchedFrom + " alone"
}
