package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/internal/clihelp"
	"github.com/tsdescramble/tsdescramble/psi"
)

// The checks of a command line made before anything is read, and the wording of the flag
// parser's errors. A message names a flag or the position of an argument, never a value a user
// typed: people paste control words into command lines, and a forgotten pair of quotes or a key
// given to the wrong flag must not end up on a screen, in a terminal's scroll-back or in a log.

// argsKey is the key of the App's Metadata that holds the command line (without the program
// name), so that a message can say which argument it means.
const argsKey = "args"

// onUsageError is the OnUsageError of the app and of every command: one line that says what is
// wrong and points at the command's help, instead of the whole help. Every parse error is a
// usage error (exit 2).
func onUsageError(c *cli.Context, err error, _ bool) error {
	help := "tsdescramble -h"
	var flags []cli.Flag
	if c != nil && c.Command != nil {
		if c.Command.HelpName != "" {
			help = c.Command.HelpName + " -h"
		}
		flags = c.Command.Flags
	}
	return usageErr("%s (see %s)", clihelp.ParseMessage(err, flags, looksLikeKey), help)
}

// hexDigits counts the hex digits of s as the key parsers read it (a "0x" prefix and the
// separators ' ', '\t', ':' and '-' skipped); ok is false when s holds anything else.
func hexDigits(s string) (n int, ok bool) {
	t := strings.TrimSpace(s)
	if len(t) > 2 && (t[:2] == "0x" || t[:2] == "0X") {
		t = t[2:]
	}
	for _, c := range t {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			n++
		case c == ' ' || c == '\t' || c == ':' || c == '-':
		default:
			return n, false
		}
	}
	return n, true
}

// looksLikeKey reports whether s could be key material: hex digits only, at least 6 of them
// (half of a BISS session word). Such a string is never shown in a message.
func looksLikeKey(s string) bool {
	n, ok := hexDigits(s)
	return ok && n >= 6
}

// strayArgument is the usage error for arguments left over after the flags (args), of the
// command line cmdline. An argument that names an existing file is shown (the input given
// without -in); any other is named by its position, since it is most often the second half of
// a control word typed without quotes.
func strayArgument(args, cmdline []string) error {
	arg := args[0]
	if fi, err := os.Stat(arg); err == nil && !fi.IsDir() && !looksLikeKey(arg) {
		return usageErr("unexpected argument %s: to read it, give -in %s", arg, arg)
	}
	pos := ""
	if len(cmdline) >= len(args) {
		// The parser stops at the first argument that is not a flag or a flag's value, so the
		// arguments left over are the tail of the command line.
		pos = fmt.Sprintf(" %d", len(cmdline)-len(args)+1)
	}
	return usageErr("argument%s is neither a flag nor a flag's value: quote a value that holds spaces, and give the input with -in FILE", pos)
}

// mistypedCommand is the usage error for a first argument that is no flag but is close to the
// name of a command (prob: probe) or of a flag without its dash (version: -version), or nil.
// Neither a file nor key material is ever taken for one.
func mistypedCommand(arg string, commands []string, flags []cli.Flag) error {
	if looksLikeKey(arg) || strings.ContainsAny(arg, "./\\") {
		return nil
	}
	if _, err := os.Stat(arg); err == nil {
		return nil
	}
	if name := clihelp.SimilarName(arg, commands); name != "" {
		return usageErr("unknown command %s: did you mean %s? (tsdescramble -h lists the commands)", arg, name)
	}
	if name := clihelp.SimilarFlag(arg, flags); name != "" {
		return usageErr("unknown command %s: did you mean the flag -%s?", arg, name)
	}
	return nil
}

// isTerminal reports whether f is an *os.File on a terminal, as the Env's hook says.
func isTerminal(env Env, f any) bool {
	file, ok := f.(*os.File)
	return ok && env.IsTerminal != nil && env.IsTerminal(file)
}

// flagsBeforeCommand is the Before of the commands: flags given before a command's name belong
// to the descrambler, whose flags the command does not read, so they are refused rather than
// silently dropped.
func flagsBeforeCommand(c *cli.Context) error {
	lineage := c.Lineage()
	if len(lineage) < 2 || lineage[1] == nil {
		return nil
	}
	// The parser marks every name of a flag given by one of them: each flag is named once, by
	// its first name.
	var names []string
	for _, n := range lineage[1].LocalFlagNames() {
		if f := clihelp.FlagByName(lineage[1].Command.Flags, n); f != nil {
			n = f.Names()[0]
		}
		if n = "-" + n; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	given := names[0] + " is"
	if len(names) > 1 {
		given = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " are"
	}
	name := c.Command.Name
	return usageErr("%s given before the command %s: flags go after it (tsdescramble %s [flags]; tsdescramble %s -h lists them)",
		given, name, name, name)
}

// errorStatus writes the message of err, which ended a run, to stderr and returns the exit
// status. Errors of the flag parser arrive as usage errors (onUsageError), so an error of any
// other kind is a failure of the run, never a usage error.
func errorStatus(err error, env Env) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			logError(env.Stderr, ee.msg)
		}
		return ee.code
	}
	logError(env.Stderr, err.Error())
	return exitFail
}

// errorCode is the exit status errorStatus returns for err, without writing its message.
func errorCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	}
	return exitFail
}

// parsePIDs reads the value of -pid. The list parser's messages quote the item they refuse;
// here an item is named by its position in the list.
func parsePIDs(s string) ([]uint16, error) {
	pids, err := psi.ParsePIDList(s)
	if err == nil {
		return pids, nil
	}
	const example = "(example: -pid 0x100,0x101 or -pid 256-259)"
	if strings.TrimSpace(s) == "" {
		return nil, usageErr("-pid: no PID given %s", example)
	}
	for i, item := range strings.Split(s, ",") {
		if strings.TrimSpace(item) == "" {
			return nil, usageErr("-pid: item %d of the list is empty %s", i+1, example)
		}
		if _, err := psi.ParsePIDList(item); err != nil {
			return nil, usageErr("-pid: item %d of the list is not a PID (0 to 0x1FFF, decimal or 0x hex) nor a range FIRST-LAST of them %s", i+1, example)
		}
	}
	return nil, usageErr("-pid: want PIDs from 0 to 0x1FFF %s", example)
}
