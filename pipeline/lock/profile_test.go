package lock

import (
	"errors"
	"strings"
	"testing"
)

func goodProfile() map[string]any {
	return map[string]any{
		"platform": "linux/amd64",
		"training": strings.Repeat("0a", 32),
		"url":      "https://pgo.example.org/nginx-forge-pgo-amd64-0a0a0a0a0a0a.tar",
		"sha256":   strings.Repeat("1b", 32),
	}
}

// Recorded profiles are parsed as strictly as components: each bad field is named.
func TestProfilesParse(t *testing.T) {
	b := mutate(t, func(m map[string]any) { m["profiles"] = []any{goodProfile()} })
	l, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := l.Profile("linux/amd64", strings.Repeat("0a", 32))
	if !ok || p.FileName() != "nginx-forge-pgo-amd64-0a0a0a0a0a0a.tar" {
		t.Fatalf("profile %+v, found %v", p, ok)
	}
	if _, ok := l.Profile("linux/arm64", p.Training); ok {
		t.Error("an amd64 profile was found for arm64")
	}
	src, ok := l.Input(profileSourcePrefix + "amd64")
	if !ok || src.SHA256 != p.SHA256 || src.URL != p.URL || src.Unsigned == "" || src.Version != "0a0a0a0a0a0a" {
		t.Errorf("Input of the profile: %+v, %v", src, ok)
	}
	out, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil || len(back.Profiles) != 1 || back.Profiles[0] != p {
		t.Errorf("round trip: %v, %+v", err, back)
	}

	for _, tc := range []struct {
		field string
		edit  func(p map[string]any)
	}{
		{"profiles[0].platform", func(p map[string]any) { p["platform"] = "linux/riscv64" }},
		{"profiles[0].training", func(p map[string]any) { p["training"] = "abc" }},
		{"profiles[0].url", func(p map[string]any) { p["url"] = "http://pgo.example.org/p.tar" }},
		{"profiles[0].sha256", func(p map[string]any) { p["sha256"] = strings.Repeat("1B", 32) }},
	} {
		b := mutate(t, func(m map[string]any) {
			p := goodProfile()
			tc.edit(p)
			m["profiles"] = []any{p}
		})
		_, err := Parse(b)
		var fe *fieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
	b = mutate(t, func(m map[string]any) { m["profiles"] = []any{goodProfile(), goodProfile()} })
	var fe *fieldError
	if _, err := Parse(b); !errors.As(err, &fe) || fe.Field != "profiles[1].platform" {
		t.Errorf("two profiles for one platform: %v", err)
	}
}

// SetProfile keeps one profile per platform: a new recording replaces the old one.
func TestSetProfileReplaces(t *testing.T) {
	l := &Lock{}
	l.SetProfile(Profile{Platform: "linux/amd64", Training: "a"})
	l.SetProfile(Profile{Platform: "linux/arm64", Training: "b"})
	l.SetProfile(Profile{Platform: "linux/amd64", Training: "c"})
	if len(l.Profiles) != 2 || l.Profiles[0].Training != "c" {
		t.Errorf("profiles: %+v", l.Profiles)
	}
}
