package main

import (
	"flag"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/internal/clihelp"
)

// The help pages: tsdescramble has over twenty flags, so its pages group them by category in
// the order a user needs them (laid out by internal/clihelp), and its commands share a help
// command and the wording of usage errors.

// Flag categories, in the order the help lists them.
const (
	catIO         = "input and output"
	catLive       = "live streams"
	catKeys       = "keys"
	catSelection  = "selection"
	catScrambling = "scrambling"
	catTuning     = "tuning"
	catReporting  = "reporting"
	catHelp       = "help"
)

var categoryOrder = []string{catIO, catLive, catKeys, catSelection, catScrambling, catTuning, catReporting, catHelp}

func init() {
	// urfave/cli's default -v for the version would take -v from -verbose.
	cli.VersionFlag = &sharedSwitch{cli.BoolFlag{Name: "version", Usage: "print the version and the engine this CPU runs", Category: catHelp}}
	cli.HelpFlag = &sharedSwitch{cli.BoolFlag{Name: "help", Aliases: []string{"h"}, Usage: "show this help", Category: catHelp}}
	clihelp.Install(categoryOrder, catHelp)
}

// sharedSwitch is a switch that every run shares: urfave/cli adds its package-level HelpFlag
// and VersionFlag to each app and command it runs. BoolFlag.Apply records the flag's default
// in the flag itself, so one BoolFlag would be written by every run, and two runs of Main side
// by side (a program that embeds the command, or its tests) would race. Apply here defines a
// copy in the run's own flag set and leaves the shared flag as it was made; the flag's value
// lives in the flag set, so nothing of one run reaches another.
type sharedSwitch struct{ cli.BoolFlag }

func (f *sharedSwitch) Apply(set *flag.FlagSet) error {
	own := f.BoolFlag
	return own.Apply(set)
}

// commands gives the commands what they have in common: a one-line message for a bad flag, the
// refusal of the descrambler's flags given before their name, and no help subcommand of their
// own (probe help would otherwise show the help rather than probe a file named help). The
// help command comes last.
func commands(cmds ...*cli.Command) []*cli.Command {
	for _, c := range cmds {
		c.OnUsageError = onUsageError
		c.Before = flagsBeforeCommand
		c.HideHelpCommand = true
	}
	return append(cmds, helpCommand())
}

// helpCommand is `tsdescramble help [COMMAND]`. urfave/cli has one, but it answers an unknown
// command with exit status 3, which here means that the keys do not fit.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:            "help",
		Aliases:         []string{"h"},
		Usage:           "show the help of tsdescramble, or of one command",
		UsageText:       "tsdescramble help [COMMAND]",
		HideHelpCommand: true,
		OnUsageError:    onUsageError,
		Action: func(c *cli.Context) error {
			switch c.NArg() {
			case 0:
				return cli.ShowAppHelp(c)
			case 1:
				name := c.Args().First()
				if c.App.Command(name) == nil {
					var names []string
					for _, cmd := range c.App.VisibleCommands() {
						if cmd.Name != "help" {
							names = append(names, cmd.Name)
						}
					}
					return usageErr("help: no command of that name: the commands are %s", strings.Join(names, ", "))
				}
				return cli.ShowCommandHelp(c.Lineage()[1], name)
			}
			return usageErr("help: one command at a time: tsdescramble help [COMMAND]")
		},
	}
}
