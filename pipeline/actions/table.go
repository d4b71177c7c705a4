package actions

import (
	"strings"
	"unicode/utf8"
)

// textWidth is what the terminal's update table keeps to: a long cell (an image reference, a
// refusal's fix) wraps inside its column rather than widening the table (issue 40: a
// 230-column table).
const textWidth = 100

// columnGap is the space between two columns.
const columnGap = 2

// minColumn is the narrowest a column is squeezed to.
const minColumn = 8

// renderTable lays rows (the first is the header) out in columns no wider than width in all,
// narrowing the widest column first and wrapping its cells over several lines.
func renderTable(rows [][]string, width int) string {
	if len(rows) == 0 {
		return ""
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	total := func() int {
		n := columnGap * (len(widths) - 1)
		for _, w := range widths {
			n += w
		}
		return n
	}
	for total() > width {
		widest := 0
		for i, w := range widths {
			if w > widths[widest] {
				widest = i
			}
		}
		if widths[widest] <= minColumn {
			break // as narrow as it goes: a table of many columns stays wider
		}
		widths[widest]--
	}
	var b strings.Builder
	for _, r := range rows {
		cells := make([][]string, len(r))
		height := 1
		for i, c := range r {
			cells[i] = wrap(c, widths[i])
			height = max(height, len(cells[i]))
		}
		for l := 0; l < height; l++ {
			var line strings.Builder
			for i := range r {
				part := ""
				if l < len(cells[i]) {
					part = cells[i][l]
				}
				line.WriteString(part)
				if i < len(r)-1 {
					line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(part)+columnGap))
				}
			}
			b.WriteString(strings.TrimRight(line.String(), " "))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// wrap breaks s into lines of at most width runes: at spaces, and a word longer than that
// (an image reference, a URL) where breakAt says.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for utf8.RuneCountInString(word) > width {
			if line != "" {
				lines, line = append(lines, line), ""
			}
			cut := breakAt(word, width)
			lines = append(lines, word[:cut])
			word = word[cut:]
		}
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines, line = append(lines, line), word
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

// breakAt is the byte offset to cut a word too long for width at: after the last '/' within
// width runes, else the last ':', else the last '-', else at width runes.
func breakAt(word string, width int) int {
	end, n := 0, 0
	for i := range word {
		if n == width {
			end = i
			break
		}
		n++
	}
	if end == 0 {
		end = len(word)
	}
	// A path breaks best between its directories, then at a tag or a hyphen.
	for _, sep := range []string{"/", ":", "-"} {
		if i := strings.LastIndex(word[:end], sep); i > 0 {
			return i + 1
		}
	}
	return end
}
