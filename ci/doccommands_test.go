package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// The one reading of documented ci command lines (README.md, MEASUREMENTS.md): where they
// are, how a shell would split them, and how they are checked against the program.

// docCommand is a ci command line a document shows.
type docCommand struct {
	line int    // the document's line it starts on
	text string // as written (continuation lines joined)
	// args are what ci gets: the words after "go run ./ci" or "ci", as a shell expands them
	// (variables and $(...) replaced by plausible values, see shellLexer).
	args []string
	// partial: a mention in prose (a code span), which may leave out values and the flags a
	// command needs, not a line to run.
	partial bool
}

func (c docCommand) String() string { return fmt.Sprintf("line %d: `%s`", c.line, c.text) }

var (
	backtickSpan = regexp.MustCompile("`([^`]+)`")
	fence        = regexp.MustCompile("^ {0,3}(```+|~~~+)[ \t]*([A-Za-z]*)")
	// shellFences are the code blocks whose lines are shell commands.
	shellFences = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}
	envAssign   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// spanCommands are the ci commands among the code spans of prose, text being lines joined
// by "\n" from the document's line first: each span is read across line breaks (a newline
// in it is a space) and is a partial command line. A span that is only "ci" names the
// program, not a command line.
func spanCommands(text string, first int) []docCommand {
	var out []docCommand
	for _, m := range backtickSpan.FindAllStringSubmatchIndex(text, -1) {
		span := strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
		line := first + strings.Count(text[:m[0]], "\n")
		for _, words := range shellCommands(span) {
			if args, ok := ciArgs(words); ok && len(args) > 0 {
				out = append(out, docCommand{line: line, text: span, args: args, partial: true})
			}
		}
	}
	return out
}

// docCommands are the ci command lines of a Markdown document: whole lines in its shell
// code blocks (```sh, bash, shell, console; a console block's "$ " prompts dropped), and
// partial ones in the code spans of its prose, read paragraph by paragraph (a table row is
// a paragraph of its own).
func docCommands(doc string) []docCommand {
	var out []docCommand
	var para []string
	paraStart := 0
	flush := func() {
		out = append(out, spanCommands(strings.Join(para, "\n"), paraStart)...)
		para = nil
	}
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			blank, own := strings.TrimSpace(lines[i]) == "", strings.HasPrefix(lines[i], "#") || strings.HasPrefix(lines[i], "|")
			if blank || own {
				flush()
			}
			if len(para) == 0 {
				paraStart = i + 1
			}
			if !blank {
				para = append(para, lines[i])
			}
			if own {
				flush()
			}
			continue
		}
		flush()
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), m[1]) {
			end++
		}
		if shellFences[m[2]] {
			out = append(out, blockCommands(lines[i+1:end], i+2)...)
		}
		i = end
	}
	flush()
	return out
}

// blockCommands are the ci command lines of a shell code block whose first line is the
// document's line first: a line ending in a backslash continues on the next.
func blockCommands(lines []string, first int) []docCommand {
	var out []docCommand
	for i := 0; i < len(lines); i++ {
		start, logical := i, strings.TrimPrefix(lines[i], "$ ")
		for strings.HasSuffix(logical, "\\") && i+1 < len(lines) {
			i++
			logical = strings.TrimRight(strings.TrimSuffix(logical, "\\"), " \t") + " " + strings.TrimSpace(lines[i])
		}
		for _, words := range shellCommands(logical) {
			if args, ok := ciArgs(words); ok {
				out = append(out, docCommand{line: first + start, text: strings.TrimSpace(logical), args: args})
			}
		}
	}
	return out
}

// ciArgs are the arguments a shell command's words give ci ("go run ./ci ARGS" or
// "ci ARGS"), past environment assignments, sudo and env with their options; false when
// the words run something else.
func ciArgs(words []string) ([]string, bool) {
	withArg := map[string]map[string]bool{
		"sudo": {"-u": true, "-g": true, "-C": true, "-D": true, "-h": true, "-p": true, "-r": true, "-t": true, "-U": true, "-T": true},
		"env":  {"-u": true, "-C": true, "-S": true},
	}
	for len(words) > 0 {
		if envAssign.MatchString(words[0]) {
			words = words[1:]
			continue
		}
		opts, wrapper := withArg[words[0]]
		if !wrapper {
			break
		}
		words = words[1:]
		for len(words) > 0 && strings.HasPrefix(words[0], "-") {
			if words[0] == "--" {
				words = words[1:]
				break
			}
			if opts[words[0]] && len(words) > 1 {
				words = words[1:]
			}
			words = words[1:]
		}
	}
	switch {
	case len(words) > 0 && words[0] == "ci":
		return words[1:], true
	case len(words) > 2 && words[0] == "go" && words[1] == "run":
		for i, w := range words[2:] {
			if w == "./ci" || w == "./ci/" {
				return words[3+i:], true
			}
		}
	}
	return nil, false
}

// placeholder is a word in capitals the documents write for a value (OWNER, REPO, SHA).
var placeholder = regexp.MustCompile(`\b[A-Z][A-Z0-9_]*[A-Z]\b`)

// checkDocCommand runs a documented command line through main's own code: run itself
// (exit status 0 wanted) for what is not a command (help, --version), and, with a context
// through checkUsage, for a whole line of a command that checks its usage alone
// (command.checked; placeholders in capitals lowered: ghcr.io/OWNER/nginx is a
// repository once OWNER is one); otherwise the command's flag parsing (parseFlags) only,
// all a mention in prose gets, which may also end in a flag whose value it leaves out.
func checkDocCommand(c docCommand) error {
	if len(c.args) == 0 {
		return nil // "go run ./ci" lists the commands
	}
	cmd, isCommand := commands[c.args[0]]
	if !isCommand || (cmd.checked != nil && !c.partial) {
		args := c.args
		if !c.partial {
			args = make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = placeholder.ReplaceAllStringFunc(a, strings.ToLower)
			}
		}
		var stderr strings.Builder
		if code := checkUsage(args, &stderr); code != 0 {
			first, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
			return fmt.Errorf("exit status %d: %s", code, first)
		}
		return nil
	}
	_, _, err := parseFlags(cmd, c.args[1:], io.Discard)
	last := c.args[len(c.args)-1]
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return nil
	case c.partial && err.Error() == "flag needs an argument: -"+strings.TrimLeft(last, "-"):
		return nil // `ci build --output` names the flag
	}
	return err
}
