package actoviq_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The README and the pages under docs/ link each other by relative paths and
// anchors, and the code cites the contract as docs/design.md#anchor. A page
// split, a renamed heading or a moved file breaks them silently; this test
// reads every link and every citation and fails on one that leads nowhere.

var (
	mdLink     = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	mdFence    = regexp.MustCompile("(?ms)^```.*?^```")
	mdCode     = regexp.MustCompile("`[^`\n]*`")
	mdHeading  = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	docCite    = regexp.MustCompile(`docs/([a-z0-9-]+\.md)(#[A-Za-z0-9_-]+)?`)
	specCite   = regexp.MustCompile(`\bSPEC\b`)
)

// slug is the anchor GitHub gives a heading: lowercased, with everything but
// letters, digits, spaces, '-' and '_' dropped, spaces turned into '-'.
func slug(h string) string {
	h = strings.ReplaceAll(h, "`", "")
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors a markdown file defines: its headings' slugs
// (a repeated one gets -1, -2, ... as on GitHub) and explicit <a id>s.
func anchors(t *testing.T, path string, cache map[string]map[string]bool) map[string]bool {
	t.Helper()
	if a, ok := cache[path]; ok {
		return a
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := mdFence.ReplaceAllString(string(src), "")
	a := map[string]bool{}
	seen := map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			a[s+"-"+itoa(n)] = true
		} else {
			a[s] = true
		}
		seen[s]++
	}
	for _, m := range htmlAnchor.FindAllStringSubmatch(text, -1) {
		a[m[1]] = true
	}
	cache[path] = a
	return a
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestDocLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"README.md"}, pages...)
	cache := map[string]map[string]bool{}
	links := 0
	for _, page := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := mdCode.ReplaceAllString(mdFence.ReplaceAllString(string(src), ""), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			resolved := page
			if file != "" {
				resolved = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(resolved); err != nil {
				t.Errorf("%s: link %q: %s does not exist", page, target, resolved)
				continue
			}
			if anchor != "" {
				if !strings.HasSuffix(resolved, ".md") {
					t.Errorf("%s: link %q: an anchor into a file that is not markdown", page, target)
				} else if !anchors(t, resolved, cache)[anchor] {
					t.Errorf("%s: link %q: %s has no heading or <a id> for #%s", page, target, resolved, anchor)
				}
			}
		}
	}
	if links < 20 {
		t.Errorf("only %d relative links found in README.md and docs/*.md: is the link pattern still right?", links)
	}
}

// The code cites the contract as docs/design.md#anchor (and other pages the
// same way); each citation must lead somewhere. "SPEC §N" cited a document
// outside the repository, which a reader cannot open.
func TestDocCitationsResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	cites := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || path == "docs_test.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if specCite.MatchString(line) {
				t.Errorf("%s:%d: cites SPEC, a document outside the repository; cite docs/design.md#anchor", path, i+1)
			}
			for _, m := range docCite.FindAllStringSubmatch(line, -1) {
				cites++
				page := filepath.Join("docs", m[1])
				if _, err := os.Stat(page); err != nil {
					t.Errorf("%s:%d: cites %s, which does not exist", path, i+1, page)
					continue
				}
				if m[2] != "" && !anchors(t, page, cache)[m[2][1:]] {
					t.Errorf("%s:%d: cites %s%s: no such heading or <a id> in %s", path, i+1, page, m[2], page)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cites == 0 {
		t.Error("no docs/*.md citation found in the code: is the pattern still right?")
	}
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"MCP 2026-07-28": "mcp-2026-07-28",
		"Data hygiene: what is redacted, and what is not": "data-hygiene-what-is-redacted-and-what-is-not",
		"Checking your tools: `actoviq-vet`":              "checking-your-tools-actoviq-vet",
		"Day 300 vs day 1 (issue 21)":                     "day-300-vs-day-1-issue-21",
		"The fast path: `go test ./...`":                  "the-fast-path-go-test-",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}
