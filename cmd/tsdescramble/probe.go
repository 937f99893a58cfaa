package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/multiplex"
	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/probe"
	"github.com/tsdescramble/tsdescramble/srt"
)

// probeCommand is `tsdescramble probe`: a report on a stream, on stdout, as text or JSON.
func probeCommand(env Env) *cli.Command {
	return &cli.Command{
		Name:      "probe",
		Usage:     "show what is in a transport stream: services, PIDs, CA systems, scrambling",
		UsageText: "tsdescramble probe [flags] [PATH|-]",
		Description: `Reads a whole transport stream (188, 192 or 204-byte packets) from PATH, or from stdin when
PATH is - or absent, once, and prints on stdout:
  - the framing, size, duration and bitrate (from the PCRs),
  - the services of the PAT with their PMT, names from the SDT, their streams with their
    types (read with the registration and DVB descriptors: Blu-ray "HDMV" streams, SCTE 35,
    T2-MI, KLV ...), and their CA descriptors (CA system and ECM PID),
  - the EMM PIDs of the CAT,
  - every PID with what it carries (the tables read on it are named by their table_id: a SIT
    on the network PID shows as SIT), its packets that are clear, even (TSC 10), odd (TSC 11)
    and reserved (TSC 01), and its crypto periods (runs of one parity, counted as the
    descrambler counts them: a single packet of the other parity is a glitch, not a period).
The tables count whatever order they come in: PMTs sent before the first PAT are bound to
their services.
Flags go before the path. Examples:
   tsdescramble probe recording.ts
   tsdescramble probe -json recording.ts | jq '.pids[] | select(.even + .odd > 0)'
   tsdescramble probe - < recording.m2ts`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON, for scripts"},
			&cli.BoolFlag{Name: "config", Usage: "print, instead of the report, the config (YAML, for tsdescramble -config) that splits the stream into one output per service, SERVICE.ts each, a comment above each naming it and its CA systems: add each scrambled service's keys"},
		},
		Action: func(c *cli.Context) error { return runProbe(c, env) },
	}
}

// runProbe reads the input named by the argument to its end and prints the report.
func runProbe(c *cli.Context, env Env) error {
	args := c.Args().Slice()
	if len(args) > 1 {
		for _, a := range args[1:] {
			if a == "-json" || a == "--json" {
				return usageErr("probe: flags go before the path: tsdescramble probe -json %s", args[0])
			}
		}
		return usageErr("probe: one input at a time, got %d: tsdescramble probe [-json] PATH|-", len(args))
	}
	path := "-"
	if len(args) == 1 {
		path = args[0]
	}
	if path == "-" && len(args) == 0 && env.IsTerminal != nil {
		// Reading a terminal would wait for a stream that is not coming.
		if f, ok := env.Stdin.(*os.File); ok && env.IsTerminal(f) {
			return usageErr("probe: give a PATH, or pipe a stream in: tsdescramble probe [-json] PATH|-")
		}
	}
	if live.IsAddress(path) || srt.IsURL(path) {
		// A report covers a whole input, and a live one never ends.
		return usageErr("probe: reads a file or a pipe to its end, and %s never ends: record some of it first (tsdescramble -in %s -out rec.ts -duration 10s, with the stream's keys), then probe rec.ts", redacted(path), redacted(path))
	}
	in, err := openInput(path, env)
	if err != nil {
		return err
	}
	defer in.Close()

	name := path
	if name == "-" {
		name = "stdin"
	}
	rep, err := probe.Probe(in)
	switch {
	case errors.Is(err, ts.ErrNoSync), errors.Is(err, probe.ErrEmpty):
		return failErr("%s: %v", name, err)
	case err != nil:
		return failErr("cannot read %s: %v", name, runfiles.UnwrapPath(err))
	}

	switch {
	case c.Bool("json") && c.Bool("config"):
		return usageErr("probe: -json prints the report and -config a config: give one")
	case c.Bool("config"):
		err = splitConfig(rep, path).Write(env.Stdout)
	case c.Bool("json"):
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	default:
		err = rep.WriteText(env.Stdout)
	}
	if err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe) {
			return quietExit // the reader of stdout has gone (probe | head)
		}
		return failErr("cannot write the report: %v", err)
	}
	return nil
}

// splitConfig is the config of a run that splits the probed stream: each service of its PAT
// to SERVICE.ts, without keys (the stream cannot tell them), a comment naming the service and
// what scrambles it, so that whoever fills in the keys knows which is which.
func splitConfig(rep *probe.Report, path string) *multiplex.Config {
	c := &multiplex.Config{}
	if path != "-" {
		c.Input = path
	}
	for _, s := range rep.Services {
		var about []string
		if s.Name != "" {
			about = append(about, strconv.Quote(s.Name))
		}
		cas := map[string]bool{}
		for _, ca := range s.CA {
			cas[fmt.Sprintf("%s, ECM PID %#04x", ca.SystemName, ca.ECMPID)] = true
		}
		for _, st := range s.Streams {
			for _, ca := range st.CA {
				cas[fmt.Sprintf("%s, ECM PID %#04x", ca.SystemName, ca.ECMPID)] = true
			}
		}
		for _, k := range slices.Sorted(maps.Keys(cas)) {
			about = append(about, k)
		}
		if scrambledService(rep, s) {
			about = append(about, "scrambled: give its keys (keys: biss:HEX, cw-file:FILE, cs378x://...)")
		} else {
			about = append(about, "clear")
		}
		c.Services = append(c.Services, multiplex.Service{Number: s.Number, Output: fmt.Sprintf("%d.ts", s.Number),
			Comment: strings.Join(about, "; ")})
	}
	return c
}

// scrambledService reports whether a stream of s has scrambled packets.
func scrambledService(rep *probe.Report, s probe.Service) bool {
	for _, st := range s.Streams {
		for _, p := range rep.PIDs {
			if p.PID == st.PID && p.Even+p.Odd > 0 {
				return true
			}
		}
	}
	return false
}
