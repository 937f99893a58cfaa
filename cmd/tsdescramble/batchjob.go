package main

import (
	"flag"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/pipeline"
)

// A batch's jobs run the command's own action (process) on a context built from the job's
// flags, without an app of urfave/cli for each: building one (its flags, its commands, the
// version string, which measures the cipher engines) and running it (a regular expression
// per flag name, for each flag not given, on each lookup of whether a flag was given) cost a
// job over a small file a large part of its time. The flags are parsed by the same Go flag set
// the app would build from the same flag definitions, and their names joined as the app joins
// them, so that every value, default and check is the single command's; a command line that
// this parse refuses goes through the whole app instead, for its exact message.

// jobMode is the pipeline mode of each command a manifest may name (jobCommands).
var jobMode = map[string]pipeline.Mode{
	"descramble": pipeline.Descramble,
	"scramble":   pipeline.Scramble,
}

// jobRunner runs jobs one after another. It is not safe for concurrent use: applying a flag
// to a flag set writes to the flag's definition, so each of a batch's goroutines has its own.
type jobRunner struct {
	cmds map[string]*jobCommand
}

// jobCommand is a command's flag definitions and the names of each, worked out once.
type jobCommand struct {
	name  string
	flags []cli.Flag
	names [][]string // of flags[i]: the first name, then the aliases
	index map[string]int
}

func newJobRunner(env Env) *jobRunner {
	r := &jobRunner{cmds: map[string]*jobCommand{}}
	for name, flags := range jobCommands(env) {
		jc := &jobCommand{name: name, flags: flags, index: map[string]int{}}
		for i, f := range flags {
			names := f.Names()
			jc.names = append(jc.names, names)
			for _, n := range names {
				if _, taken := jc.index[n]; !taken { // as flagByName: the first flag of a name
					jc.index[n] = i
				}
			}
		}
		r.cmds[name] = jc
	}
	return r
}

// lookup returns the flag named name and its first name, or nil.
func (jc *jobCommand) lookup(name string) (f cli.Flag, primary string) {
	i, ok := jc.index[name]
	if !ok {
		return nil, ""
	}
	return jc.flags[i], jc.names[i][0]
}

// run runs a job's command line (args, without the program's name and the command's) as the
// command would, and returns its exit status.
func (r *jobRunner) run(command string, args []string, env Env) int {
	name := command
	if name == "" {
		name = "descramble"
	}
	jc := r.cmds[name]
	ctx := jc.parse(args)
	if ctx == nil {
		full := []string{"tsdescramble"}
		if command != "" {
			full = append(full, command)
		}
		return runJob(append(full, args...), env)
	}
	ctx.App.Metadata = map[string]any{argsKey: args}
	return errorStatus(profiledProcess(env, jobMode[name])(ctx), env)
}

// parse parses args into a context that reads as the app's would, or returns nil where the
// parse fails: the app's parser then says why.
func (jc *jobCommand) parse(args []string) *cli.Context {
	set := flag.NewFlagSet(jc.name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for i, f := range jc.flags {
		if err := define(set, f, jc.names[i]); err != nil {
			return nil
		}
	}
	if err := set.Parse(args); err != nil || set.NArg() > 0 {
		return nil
	}
	// As the app does after its parse: a flag given by one of its names is given by all, so
	// that a lookup by any name finds its value and that it was given.
	given := map[string]bool{}
	set.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, names := range jc.names {
		var from *flag.Flag
		for _, n := range names {
			if given[n] {
				if from != nil {
					return nil // two forms of one flag
				}
				from = set.Lookup(n)
			}
		}
		if from == nil {
			continue
		}
		for _, n := range names {
			if !given[n] {
				if err := set.Set(n, from.Value.String()); err != nil {
					return nil
				}
			}
		}
	}
	// The command's flags are left out of the context: with every name of a given flag marked
	// given, a flag the flag set does not mark is not given, which the context then answers
	// without looking through every flag's names.
	ctx := cli.NewContext(&cli.App{Name: "tsdescramble"}, set, nil)
	ctx.Command = &cli.Command{Name: jc.name}
	return ctx
}

// define adds flag f to set under each of its names, as f.Apply does. A flag of the kinds the
// commands have that takes no value from the environment or a file and writes to no variable
// of its own is defined directly, under the names worked out once: f.Apply works its names out
// again on each call, with a regular expression per name, over half the cost of a job's parse
// (BenchmarkJobParse). The context reads every kind through
// the value's text (cli's lookups parse f.Value.String()), so that the flag package's own
// values read as cli's. Any other flag goes through f.Apply.
func define(set *flag.FlagSet, f cli.Flag, names []string) error {
	switch f := f.(type) {
	case *cli.StringFlag:
		if plain(f.EnvVars, f.FilePath, f.Destination == nil) {
			return defineEach(names, set.String, f.Value, f.Usage)
		}
	case *cli.BoolFlag:
		if plain(f.EnvVars, f.FilePath, f.Destination == nil && f.Count == nil) {
			return defineEach(names, set.Bool, f.Value, f.Usage)
		}
	case *cli.IntFlag:
		if plain(f.EnvVars, f.FilePath, f.Destination == nil) {
			return defineEach(names, set.Int, f.Value, f.Usage)
		}
	case *cli.Int64Flag:
		if plain(f.EnvVars, f.FilePath, f.Destination == nil) {
			return defineEach(names, set.Int64, f.Value, f.Usage)
		}
	case *cli.DurationFlag:
		if plain(f.EnvVars, f.FilePath, f.Destination == nil) {
			return defineEach(names, set.Duration, f.Value, f.Usage)
		}
	}
	return f.Apply(set)
}

// plain reports whether a flag takes its value from the command line alone (no environment
// variables, no file) and writes it to no variable of its own.
func plain(envVars []string, filePath string, noDestination bool) bool {
	return envVars == nil && filePath == "" && noDestination
}

// defineEach defines a flag under each of its names with the flag set's method def.
func defineEach[T any](names []string, def func(name string, value T, usage string) *T, value T, usage string) error {
	for _, n := range names {
		def(n, value, usage)
	}
	return nil
}
