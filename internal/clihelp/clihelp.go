// Package clihelp lays out the help pages of a command built with urfave/cli/v2, and words the
// errors of its flag parser as one line each (messages.go). The library's
// templates list the flags in one block, or their categories in alphabetical order, with
// "(default: false)" after every switch and lines as long as the usage text. Here the flags are
// grouped by category in the order a user needs them, each with its placeholder, a default only
// where it says something, and no line wider than Width.
package clihelp

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// Width is the widest line of a help page.
const Width = 99

// Install makes urfave/cli print every help page of the app and its commands in this layout,
// the flags' categories in order (others after them, as they come); help is the category of
// the help flags, which alone makes no categories on a page.
func Install(order []string, help string) {
	cli.HelpPrinter = func(w io.Writer, templ string, data any) {
		l := layout{order: order, help: help}
		switch d := data.(type) {
		case *cli.App:
			l.app(w, d)
		case *cli.Command:
			l.command(w, d)
		default:
			cli.HelpPrinterCustom(w, templ, data, nil)
		}
	}
}

// layout is the order of the categories of a page.
type layout struct {
	order []string
	help  string
}

func (l layout) app(w io.Writer, a *cli.App) {
	var b strings.Builder
	fmt.Fprintf(&b, "NAME:\n   %s - %s\n", a.Name, a.Usage)
	section(&b, "USAGE", a.UsageText)
	section(&b, "VERSION", a.Version)
	section(&b, "DESCRIPTION", a.Description)
	var cmds []string
	width := 0
	for _, c := range a.VisibleCommands() {
		width = max(width, len(strings.Join(c.Names(), ", ")))
	}
	for _, c := range a.VisibleCommands() {
		cmds = append(cmds, fmt.Sprintf("%-*s  %s", width, strings.Join(c.Names(), ", "), c.Usage))
	}
	section(&b, "COMMANDS", strings.Join(cmds, "\n"))
	l.flags(&b, a.VisibleFlags())
	io.WriteString(w, b.String())
}

func (l layout) command(w io.Writer, c *cli.Command) {
	var b strings.Builder
	name := c.HelpName
	if name == "" {
		name = "tsdescramble " + c.Name
	}
	fmt.Fprintf(&b, "NAME:\n   %s - %s\n", name, c.Usage)
	section(&b, "USAGE", c.UsageText)
	section(&b, "DESCRIPTION", c.Description)
	l.flags(&b, c.VisibleFlags())
	io.WriteString(w, b.String())
}

// section writes a heading and text indented by three spaces, after a blank line; nothing when
// text is empty.
func section(b *strings.Builder, heading, text string) {
	if text == "" {
		return
	}
	fmt.Fprintf(b, "\n%s:\n", heading)
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("   " + line + "\n")
	}
}

// flagDoc is one flag of a help page.
type flagDoc struct {
	names    string // "-in, -i FILE"
	usage    string
	def      string // "(default: 1024)", or "" when the default is not worth showing
	category string
}

// docOf describes a flag: its names with a dash each (the form the command's contract and its
// messages use), the placeholder the usage text marks with backquotes, and the default.
func docOf(f cli.Flag) flagDoc {
	var d flagDoc
	var names []string
	for _, n := range f.Names() {
		names = append(names, "-"+n)
	}
	d.names = strings.Join(names, ", ")
	usage, placeholder := "", ""
	if df, ok := f.(cli.DocGenerationFlag); ok {
		usage, placeholder = UnquoteUsage(df.GetUsage())
		if df.TakesValue() {
			if placeholder == "" {
				placeholder = "VALUE"
			}
			d.names += " " + placeholder
		}
	}
	if def := defaultText(f); def != "" {
		d.def = "(default: " + def + ")"
	}
	d.usage = usage
	if cf, ok := f.(cli.CategorizableFlag); ok {
		d.category = cf.GetCategory()
	}
	return d
}

// UnquoteUsage returns the usage text without its backquotes and the word between the first
// pair of them, urfave/cli's way of naming a flag's placeholder.
func UnquoteUsage(usage string) (text, placeholder string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return usage, ""
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return usage, ""
	}
	placeholder = usage[i+1 : i+1+j]
	return strings.ReplaceAll(usage, "`", ""), placeholder
}

// defaultText is the default a help page shows for a flag: its DefaultText, or its value when
// that says something. An unset switch, a zero count and an empty or "-" path (explained by
// the usage text) are not shown.
func defaultText(f cli.Flag) string {
	switch f := f.(type) {
	case *cli.StringFlag:
		if f.DefaultText != "" {
			return f.DefaultText
		}
		if f.Value != "" && f.Value != "-" {
			return f.Value
		}
	case *cli.IntFlag:
		if f.DefaultText != "" {
			return f.DefaultText
		}
		if f.Value != 0 {
			return strconv.Itoa(f.Value)
		}
	case *cli.DurationFlag:
		if f.DefaultText != "" {
			return f.DefaultText
		}
		if f.Value != 0 {
			return f.Value.String()
		}
	}
	return ""
}

// flags writes the flags grouped by category, in l.order, then any other category in the order
// it comes; a page whose only category is help lists its flags under FLAGS.
func (l layout) flags(b *strings.Builder, flags []cli.Flag) {
	var docs []flagDoc
	width := 0
	categorised := false
	for _, f := range flags {
		d := docOf(f)
		docs = append(docs, d)
		width = max(width, len(d.names))
		if d.category != "" && d.category != l.help {
			categorised = true
		}
	}
	if !categorised {
		for i := range docs {
			docs[i].category = ""
		}
	}
	order := append([]string{""}, l.order...)
	for _, d := range docs {
		if !slices.Contains(order, d.category) {
			order = append(order, d.category)
		}
	}
	for _, cat := range order {
		var lines []string
		for _, d := range docs {
			if d.category == cat {
				lines = append(lines, flagLines(d, width)...)
			}
		}
		if len(lines) == 0 {
			continue
		}
		heading := strings.ToUpper(cat)
		if cat == "" {
			heading = "FLAGS"
		}
		fmt.Fprintf(b, "\n%s:\n%s\n", heading, strings.Join(lines, "\n"))
	}
}

// flagLines lays out one flag: its names in a column width wide, then its usage wrapped to the
// page, continuation lines indented to the usage column. The default is not broken across lines.
func flagLines(d flagDoc, width int) []string {
	const indent = "   "
	col := len(indent) + width + 2
	words := strings.Fields(d.usage)
	if d.def != "" {
		words = append(words, d.def)
	}
	var lines []string
	line := fmt.Sprintf("%s%-*s  ", indent, width, d.names)
	n := 0
	for _, word := range words {
		if n > 0 && len(line)+1+len(word) > Width {
			lines = append(lines, line)
			line, n = strings.Repeat(" ", col), 0
		}
		if n > 0 {
			line += " "
		}
		line += word
		n++
	}
	return append(lines, strings.TrimRight(line, " "))
}
