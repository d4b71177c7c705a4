package advisory

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Bounds on what a feed may send (check-updates reads at most this much of each answer,
// pipeline/upstream's feed refresh): the real files are far below them (nginx.org's
// security_advisories.xml is about 20 KiB, an OpenSSL CVE record about 8 KiB, the listing of
// OpenSSL's secjson directory about 100 KiB for ~300 files). A feed past a bound is refused,
// never truncated into a partial snapshot.
const (
	MaxNginxFeed      = 1 << 20
	MaxOpenSSLListing = 1 << 20
	MaxOpenSSLRecord  = 256 << 10
	// maxOpenSSLRecords caps the records one refresh reads (those of openSSLSince or later).
	maxOpenSSLRecords = 300
	// MaxOpenSSLRecordsTotal bounds the bytes of all records one refresh reads together: the 51
	// records of 2024 or later are about 450 KiB.
	MaxOpenSSLRecordsTotal = 8 << 20
)

// openSSLSince is the oldest year of OpenSSL CVE records a refresh reads: the oldest OpenSSL
// a lock here pins is 3.3 (released 2024-04-09), and a record published before a branch's
// first release cannot list it as affected.
const openSSLSince = 2024

// nginxItem is one <item> of nginx.org's xml/en/security_advisories.xml.
type nginxItem struct {
	Name, Severity, Advisory, CVE, Good, Vulnerable string
}

// nginxAttrs are the attributes the real file uses; another is a format change this reader
// has not been taught, and is refused rather than ignored.
var nginxAttrs = map[string]bool{"name": true, "severity": true, "advisory": true, "cve": true, "good": true, "vulnerable": true, "cert": true, "core": true, "href": true}

// ParseNginx reads nginx.org's security advisories (the XML source of
// https://nginx.org/en/security_advisories.html): one Advisory per <item> with a CVE, with
// source as each entry's Source. Items for nginx/Windows only and items of severity "none"
// (upstream's "not a vulnerability to fix": good="none") are left out: this project builds
// for Linux. A version list that does not parse is an error naming the item.
func ParseNginx(data []byte, source string) ([]Advisory, error) {
	if len(data) > MaxNginxFeed {
		return nil, fmt.Errorf("%d bytes, over the %d-byte bound for this feed", len(data), MaxNginxFeed)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var out []Advisory
	inSecurity, sawSecurity := false, false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not well-formed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch {
			case t.Name.Local == "security":
				inSecurity, sawSecurity = true, true
			case t.Name.Local == "item" && inSecurity:
				it, err := nginxItemOf(t)
				if err != nil {
					return nil, err
				}
				a, keep, err := it.advisory(source)
				if err != nil {
					return nil, fmt.Errorf("item CVE-%s (%q): %w", it.CVE, it.Name, err)
				}
				if keep {
					out = append(out, a)
				}
			}
		case xml.EndElement:
			if t.Name.Local == "security" {
				inSecurity = false
			}
		}
	}
	if !sawSecurity || len(out) == 0 {
		return nil, errors.New("no <security> list of <item> advisories with a CVE: is this nginx.org's xml/en/security_advisories.xml?")
	}
	return out, nil
}

func nginxItemOf(t xml.StartElement) (nginxItem, error) {
	var it nginxItem
	for _, a := range t.Attr {
		if !nginxAttrs[a.Name.Local] {
			return it, fmt.Errorf("<item> has attribute %q, which this reader does not know: upstream's format changed; teach pipeline/advisory's ParseNginx it", a.Name.Local)
		}
		switch a.Name.Local {
		case "name":
			it.Name = a.Value
		case "severity":
			it.Severity = a.Value
		case "advisory":
			it.Advisory = a.Value
		case "cve":
			it.CVE = a.Value
		case "good":
			it.Good = a.Value
		case "vulnerable":
			it.Vulnerable = a.Value
		}
	}
	return it, nil
}

var nginxRangeRE = regexp.MustCompile(`^([0-9.]+)(?:-([0-9.]+))?$`)

func (it nginxItem) advisory(source string) (Advisory, bool, error) {
	if it.CVE == "" || it.Severity == "none" {
		return Advisory{}, false, nil
	}
	a := Advisory{
		Component: "nginx", ID: "CVE-" + it.CVE, Severity: it.Severity, Summary: it.Name,
		URL: it.Advisory, Source: source,
	}
	if a.URL == "" {
		a.URL = "https://nginx.org/en/security_advisories.html"
	}
	for _, part := range strings.Split(it.Vulnerable, ",") {
		part = strings.TrimSpace(part)
		if strings.HasPrefix(part, "nginx/Windows ") {
			continue
		}
		m := nginxRangeRE.FindStringSubmatch(part)
		if m == nil {
			return a, false, fmt.Errorf("vulnerable %q: %q is not VERSION or VERSION-VERSION", it.Vulnerable, part)
		}
		r := Range{From: m[1], To: m[2]}
		if r.To == "" {
			r.To = r.From
		}
		if err := r.validate(); err != nil {
			return a, false, fmt.Errorf("vulnerable %q: %w", it.Vulnerable, err)
		}
		a.Affected = append(a.Affected, r)
	}
	if len(a.Affected) == 0 {
		return a, false, nil // nginx/Windows only
	}
	if it.Good != "none" {
		for _, g := range strings.Split(it.Good, ",") {
			g = strings.TrimSuffix(strings.TrimSpace(g), "+")
			if _, err := parseVersion(g); err != nil {
				return a, false, fmt.Errorf("good %q: %w", it.Good, err)
			}
			a.Fixed = append(a.Fixed, g)
		}
	}
	if err := a.validate(); err != nil {
		return a, false, err
	}
	return a, true, nil
}

// cveRecord is the part of a CVE JSON 5 record (OpenSSL's secjson/CVE-*.json) read here.
type cveRecord struct {
	DataType    string `json:"dataType"`
	CVEMetadata struct {
		CVEID string `json:"cveId"`
		State string `json:"state"`
	} `json:"cveMetadata"`
	Containers struct {
		CNA struct {
			Title    string `json:"title"`
			Affected []struct {
				Product  string              `json:"product"`
				Versions []map[string]string `json:"versions"`
			} `json:"affected"`
			Metrics []struct {
				Other struct {
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"other"`
			} `json:"metrics"`
			References []struct {
				URL  string   `json:"url"`
				Tags []string `json:"tags"`
			} `json:"references"`
		} `json:"cna"`
	} `json:"containers"`
}

var versionKeys = map[string]bool{"version": true, "lessThan": true, "status": true, "versionType": true}

// ParseOpenSSLRecord reads one of OpenSSL's CVE JSON 5 records (openssl/release-metadata
// secjson/CVE-*.json, served at openssl-library.org/news/secjson/). keep is false for a
// rejected record and for one that lists only OpenSSL 1.x extended-support releases (their
// letter versions, 1.1.1zd, are for paying customers' builds, never a lock here).
func ParseOpenSSLRecord(data []byte, source string) (a Advisory, keep bool, err error) {
	if len(data) > MaxOpenSSLRecord {
		return a, false, fmt.Errorf("%d bytes, over the %d-byte bound for one record", len(data), MaxOpenSSLRecord)
	}
	var rec cveRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return a, false, fmt.Errorf("not a CVE JSON record: %w", err)
	}
	if rec.DataType != "CVE_RECORD" {
		return a, false, fmt.Errorf("dataType %q is not CVE_RECORD", rec.DataType)
	}
	if rec.CVEMetadata.State == "REJECTED" {
		return a, false, nil
	}
	cna := rec.Containers.CNA
	a = Advisory{Component: "openssl", ID: rec.CVEMetadata.CVEID, Summary: cna.Title, Source: source,
		URL: "https://openssl-library.org/news/vulnerabilities/"}
	for _, m := range cna.Metrics {
		if t := m.Other.Content.Text; t != "" {
			a.Severity = t
		}
	}
	for _, r := range cna.References {
		if strings.HasPrefix(r.URL, "https://") && containsString(r.Tags, "vendor-advisory") {
			a.URL = r.URL
			break
		}
	}
	for _, af := range cna.Affected {
		if af.Product != "OpenSSL" {
			continue
		}
		for _, v := range af.Versions {
			if err := addOpenSSLRange(&a, v); err != nil {
				return a, false, fmt.Errorf("%s: %w", a.ID, err)
			}
		}
	}
	if len(a.Affected) == 0 {
		return a, false, nil
	}
	if a.Severity == "" {
		return a, false, fmt.Errorf("%s states no severity (containers.cna.metrics[].other.content.text)", a.ID)
	}
	if err := a.validate(); err != nil {
		return a, false, fmt.Errorf("%s: %w", a.ID, err)
	}
	return a, true, nil
}

func addOpenSSLRange(a *Advisory, v map[string]string) error {
	for k := range v {
		if !versionKeys[k] {
			return fmt.Errorf("affected version has %q, which this reader does not know: upstream's format changed; teach pipeline/advisory's ParseOpenSSLRecord it", k)
		}
	}
	if v["status"] != "affected" {
		return nil
	}
	if v["versionType"] == "custom" && strings.HasPrefix(v["version"], "1.") {
		return nil // 1.0.2zm, 1.1.1zd: extended support only
	}
	r := Range{From: v["version"], Before: v["lessThan"]}
	if r.Before == "" {
		r.To = r.From // one version affected
	}
	if err := r.validate(); err != nil {
		return err
	}
	a.Affected = append(a.Affected, r)
	if r.Before != "" && !containsString(a.Fixed, r.Before) {
		a.Fixed = append(a.Fixed, r.Before)
	}
	return nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// ListingEntry is one file of a GitHub contents API listing of OpenSSL's secjson directory.
type ListingEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// SHA is the file's git blob ID: the revision a refreshed entry's Source names.
	SHA         string `json:"sha"`
	Size        int64  `json:"size"`
	DownloadURL string `json:"download_url"`
}

var recordNameRE = regexp.MustCompile(`^CVE-([0-9]{4})-[0-9]{4,7}\.json$`)

// ParseOpenSSLListing reads the listing and returns the records a refresh reads: CVE-*.json
// files of openSSLSince or later, at most maxOpenSSLRecords.
func ParseOpenSSLListing(data []byte) ([]ListingEntry, error) {
	if len(data) > MaxOpenSSLListing {
		return nil, fmt.Errorf("%d bytes, over the %d-byte bound for the listing", len(data), MaxOpenSSLListing)
	}
	var all []ListingEntry
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, fmt.Errorf("not a GitHub contents listing (a JSON array of files): %w", err)
	}
	var out []ListingEntry
	for _, e := range all {
		m := recordNameRE.FindStringSubmatch(e.Name)
		if m == nil || e.Type != "file" {
			continue
		}
		if y, _ := strconv.Atoi(m[1]); y < openSSLSince {
			continue
		}
		if e.Size > MaxOpenSSLRecord {
			return nil, fmt.Errorf("%s: %d bytes, over the %d-byte bound for one record", e.Name, e.Size, MaxOpenSSLRecord)
		}
		if !strings.HasPrefix(e.DownloadURL, "https://") && !strings.HasPrefix(e.DownloadURL, "http://") {
			return nil, fmt.Errorf("%s: download_url %q is not an http(s) URL", e.Name, e.DownloadURL)
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("lists no CVE-YYYY-N.json record of %d or later: is this the listing of OpenSSL's secjson directory?", openSSLSince)
	}
	if len(out) > maxOpenSSLRecords {
		return nil, fmt.Errorf("lists %d records of %d or later, over the bound of %d", len(out), openSSLSince, maxOpenSSLRecords)
	}
	return out, nil
}

// Refresh is s with component's advisories replaced by fresh (a feed read whole), keeping
// each entry's reviewed severity and review by ID; feed records the read. s is not changed.
func (s *Snapshot) Refresh(component string, fresh []Advisory, feed Feed) (*Snapshot, error) {
	reviewed := map[string]Advisory{}
	out := &Snapshot{Schema: 1, Feeds: map[string]Feed{}}
	for k, v := range s.Feeds {
		out.Feeds[k] = v
	}
	out.Feeds[component] = feed
	for _, a := range s.Advisories {
		if a.Component == component {
			reviewed[a.ID] = a
			continue
		}
		out.Advisories = append(out.Advisories, a)
	}
	for _, a := range fresh {
		if r, ok := reviewed[a.ID]; ok && r.ReviewedSeverity != "" {
			a.ReviewedSeverity, a.Review = r.ReviewedSeverity, r.Review
		}
		out.Advisories = append(out.Advisories, a)
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}
