package main

import (
	"reflect"
	"strings"
	"testing"
)

// How a shell splits a documented command line into commands and words, for docCommands:
// enough of sh for command lines a person copies from a README, not a shell.

// shellValues are plausible values for the variables the documents use. Any other $NAME is
// its name in lower case (a placeholder, like OWNER), and a $(...) or `...` substitution
// is substitutionValue (its commands are read as commands of the line too).
var shellValues = map[string]string{
	"IMAGE":          "ghcr.io/owner/nginx",
	"DIGEST":         "sha256:" + strings.Repeat("0123456789abcdef", 4),
	"PWD":            "/home/user/nginx-forge",
	"HOME":           "/home/user",
	"XDG_CACHE_HOME": "/home/user/.cache",
	"GITHUB_REF":     "refs/heads/main",
	"GITHUB_SHA":     substitutionValue,
}

// substitutionValue is what a command substitution gives: a commit ID, which is also a
// plausible file name, tag, repository or revision.
const substitutionValue = "0123456789abcdef0123456789abcdef01234567"

// shellCommands splits one logical line (continuations joined) into simple commands, each
// its words: quotes removed, variables and substitutions expanded (shellValues); commands
// end at ; & | && || ( ) and the line at a comment; redirections are dropped with their
// targets. The commands of a substitution come before the command that uses it.
func shellCommands(line string) [][]string {
	l := &shellLexer{src: []rune(line)}
	l.lex()
	return l.cmds
}

type shellLexer struct {
	src      []rune
	i        int
	cmds     [][]string // finished commands
	words    []string   // the current command's
	word     strings.Builder
	inWord   bool
	redirect bool // the word being read is a redirection's target
}

func (l *shellLexer) lex() {
	for l.i < len(l.src) {
		r := l.src[l.i]
		l.i++
		switch {
		case r == ' ' || r == '\t' || r == '\n':
			l.endWord()
		case r == '#' && !l.inWord:
			l.i = len(l.src)
		case strings.ContainsRune(";&|()", r):
			l.endCommand()
		case r == '>' || r == '<':
			l.redirection()
		case r == '\'':
			l.inWord = true
			l.word.WriteString(l.until('\''))
		case r == '"':
			l.inWord = true
			l.double()
		case r == '\\' && l.i < len(l.src):
			l.inWord = true
			l.word.WriteRune(l.src[l.i])
			l.i++
		case r == '$' || r == '`':
			l.inWord = true
			l.expand(r)
		default:
			l.inWord = true
			l.word.WriteRune(r)
		}
	}
	l.endCommand()
}

func (l *shellLexer) endWord() {
	if !l.inWord {
		return
	}
	if l.redirect {
		l.redirect = false
	} else {
		l.words = append(l.words, l.word.String())
	}
	l.word.Reset()
	l.inWord = false
}

func (l *shellLexer) endCommand() {
	l.endWord()
	if len(l.words) > 0 {
		l.cmds = append(l.cmds, l.words)
	}
	l.words = nil
}

// redirection drops a redirection (>, >>, 2>&1, <): the descriptor number written before
// it, and its target, the next word.
func (l *shellLexer) redirection() {
	if l.inWord && strings.Trim(l.word.String(), "0123456789") == "" {
		l.word.Reset()
		l.inWord = false
	}
	l.endWord()
	for l.i < len(l.src) && strings.ContainsRune(">&|", l.src[l.i]) {
		l.i++
	}
	l.redirect = true
}

// until reads to the next q and past it: the text between.
func (l *shellLexer) until(q rune) string {
	start := l.i
	for l.i < len(l.src) && l.src[l.i] != q {
		l.i++
	}
	s := string(l.src[start:l.i])
	l.i++
	return s
}

// double reads a double-quoted string's rest: expansions, and \ before " \ $ `.
func (l *shellLexer) double() {
	for l.i < len(l.src) {
		r := l.src[l.i]
		l.i++
		switch {
		case r == '"':
			return
		case r == '\\' && l.i < len(l.src) && strings.ContainsRune("\"\\$`", l.src[l.i]):
			l.word.WriteRune(l.src[l.i])
			l.i++
		case r == '$' || r == '`':
			l.expand(r)
		default:
			l.word.WriteRune(r)
		}
	}
}

// expand writes the value of what follows $ (NAME, {NAME}, {NAME:-default}, (...), ((...)))
// or the substitution a ` opens, r being the $ or ` just read.
func (l *shellLexer) expand(r rune) {
	if r == '`' {
		l.substitute(l.until('`'))
		return
	}
	if l.i >= len(l.src) {
		l.word.WriteRune('$')
		return
	}
	switch c := l.src[l.i]; {
	case c == '(':
		end := l.closing(l.i)
		inner := string(l.src[l.i+1 : end])
		l.i = end + 1
		if strings.HasPrefix(inner, "(") {
			l.word.WriteString("1") // $((arithmetic))
			return
		}
		l.substitute(inner)
	case c == '{':
		l.i++
		name, def, hasDefault := strings.Cut(l.until('}'), ":-")
		if hasDefault {
			l.word.WriteString(def)
			return
		}
		l.word.WriteString(shellValue(name))
	case strings.ContainsRune("0123456789@*#?$!-", c):
		l.i++
		l.word.WriteString("1")
	default:
		start := l.i
		for l.i < len(l.src) && (l.src[l.i] == '_' || l.src[l.i] >= 'A' && l.src[l.i] <= 'Z' ||
			l.src[l.i] >= 'a' && l.src[l.i] <= 'z' || l.src[l.i] >= '0' && l.src[l.i] <= '9') {
			l.i++
		}
		if l.i == start {
			l.word.WriteRune('$')
			return
		}
		l.word.WriteString(shellValue(string(l.src[start:l.i])))
	}
}

// closing is the index of the ) that closes the ( at open (quotes skipped), or the end of
// the line when none does.
func (l *shellLexer) closing(open int) int {
	depth, quote := 0, rune(0)
	for j := open; j < len(l.src); j++ {
		switch c := l.src[j]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return len(l.src)
}

// substitutionValues are what the substitutions the documents make print, where a commit
// ID would not do: this machine's Debian mirror is a URL.
var substitutionValues = map[string]string{
	"go run ./pipeline/testsupport/testenv/debianmirror": "http://127.0.0.1:9/debian",
}

// substitute writes a command substitution's value; its commands are the line's too.
func (l *shellLexer) substitute(inner string) {
	l.cmds = append(l.cmds, shellCommands(inner)...)
	if v, ok := substitutionValues[strings.Join(strings.Fields(inner), " ")]; ok {
		l.word.WriteString(v)
		return
	}
	l.word.WriteString(substitutionValue)
}

func shellValue(name string) string {
	if v, ok := shellValues[name]; ok {
		return v
	}
	return strings.ToLower(name)
}

// Documented command lines split as a shell would (comments, quotes, variables,
// substitutions, redirections, ; && |), and the words that run ci found past sudo and env.
func TestDocShellLines(t *testing.T) {
	for line, want := range map[string][][]string{
		`sudo -E NO_COLOR=1 go run ./ci build --image "ghcr.io/$OWNER/nginx" 2>&1 >log | tee x # c`: {
			{"sudo", "-E", "NO_COLOR=1", "go", "run", "./ci", "build", "--image", "ghcr.io/owner/nginx"}, {"tee", "x"}},
		`ci tags --revision "$(git rev-parse HEAD)" && echo '$IMAGE' ${REF:-refs/heads/main}`: {
			{"git", "rev-parse", "HEAD"}, {"ci", "tags", "--revision", substitutionValue}, {"echo", "$IMAGE", "refs/heads/main"}},
		"X=`go run ./ci tags`; env -u A go run ./ci dockerfile -o \"$PWD/D f\"": {
			{"go", "run", "./ci", "tags"}, {"X=" + substitutionValue}, {"env", "-u", "A", "go", "run", "./ci", "dockerfile", "-o", shellValues["PWD"] + "/D f"}},
	} {
		if got := shellCommands(line); !reflect.DeepEqual(got, want) {
			t.Errorf("shellCommands(%s)\n = %q\nwant %q", line, got, want)
		}
	}
	for words, want := range map[string]string{
		"sudo -u root -E A=1 go run ./ci build --tree T": "build --tree T",
		"env -i B=2 ci --version":                        "--version",
		"go run -race ./ci smoke":                        "smoke",
		"go test ./ci -run PGO":                          "-",
		".ci/test":                                       "-",
	} {
		got, ok := ciArgs(strings.Fields(words))
		if s := strings.Join(got, " "); (ok && s != want) || (!ok && want != "-") {
			t.Errorf("ciArgs(%s) = %q, %v; want %q", words, got, ok, want)
		}
	}

}
