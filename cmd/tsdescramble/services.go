package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/split"
	"github.com/tsdescramble/tsdescramble/web"
)

// One output per service (-out-service N=DEST,…): the run's output cut by package split into
// single-program streams, each written to a file, a pipe or a network address of its own.

// serviceOut is one service's output.
type serviceOut struct {
	number uint16
	name   string // the SDT name a config gave it by, until the stream's SDT gives its number
	dest   string
	out    *output
	plan   plannedService // its keys, in a multiplex run (multiplex.go)
	run    *serviceRun    // the run that descrambles it, or nil (servicerun.go)
	pass   *passWriter    // without keys in a multiplex run: what counts its packets, and drops the scrambled ones with -missing-key drop

	// Set by a reload (reload.go).
	ended  string      // why this run of the service ended before the whole run: "removed", "changed"
	final  split.Stats // what the split gave it, when it ended
	action reloadAction
	fresh  bool // its output was opened by a reload not yet applied
}

// parseServiceOuts reads -out-service: comma-separated N=DEST, N a service number (decimal or
// 0x hex, 1 to 65535), each number and each destination once.
func parseServiceOuts(s string) ([]serviceOut, error) {
	var outs []serviceOut
	for _, item := range strings.Split(s, ",") {
		n, dest, ok := strings.Cut(strings.TrimSpace(item), "=")
		v, err := strconv.ParseUint(strings.TrimSpace(n), 0, 16)
		if !ok || err != nil || v == 0 || dest == "" {
			return nil, usageErr("-out-service: want SERVICE=DESTINATION,… (1=one.ts,2=udp://239.1.1.2:5000), the service's number from probe; %q is not", redactItem(item))
		}
		for _, o := range outs {
			switch {
			case o.number == uint16(v):
				return nil, usageErr("-out-service: service %d is given twice", v)
			case o.dest == dest && dest != os.DevNull:
				return nil, usageErr("-out-service: %s is the output of two services", redactItem(dest))
			}
		}
		outs = append(outs, serviceOut{number: uint16(v), dest: dest})
	}
	return outs, nil
}

// redactItem hides a password in a destination that is a URL.
func redactItem(s string) string {
	if _, dest, ok := strings.Cut(s, "="); ok && web.IsURL(dest) {
		return strings.SplitN(s, "=", 2)[0] + "=" + web.Redacted(dest)
	}
	return web.Redacted(s)
}

// openServiceOutputs opens each service's output and returns one output that splits the run's
// packets among them; on an error, those opened are closed.
func openServiceOutputs(outs []serviceOut, c *config, env Env, pace func(dest string) bool, handlers map[string]http.Handler) (*output, error) {
	writers := map[uint16]io.Writer{}
	for i := range outs {
		o, err := openOutput(outs[i].dest, env, pace(outs[i].dest), handlers)
		if err != nil {
			for _, done := range outs[:i] {
				done.out.close(false, 0)
			}
			return nil, err
		}
		handlers = nil // served beside the first HTTP output only
		outs[i].out = o
		writers[outs[i].number] = serviceWriter(&outs[i], c)
	}
	o := &output{services: outs, splitter: split.New(writers)}
	o.w = o.splitter
	return o, nil
}

// closeServices closes each service's output: a file is put in place on success, or kept as
// NAME.partial with what it was given after a failure.
func (o *output) closeServices(ok bool) error {
	var first error
	st := o.splitter.Stats()
	for _, s := range o.services {
		keep := st[s.number].Packets * 188
		if s.run != nil {
			keep = s.run.st.BytesOut
		} else if s.pass != nil {
			keep = s.pass.written.Load() * 188
		}
		keep += s.out.earlier.Load()
		if err := s.out.close(ok, keep); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// serviceLines are the summary's lines of the outputs per service, and the error of services
// the stream never described (their outputs are empty), or nil.
func (o *output) serviceLines() (lines []string, missing error) {
	st := o.splitter.Stats()
	var absent []string
	for _, s := range o.services {
		n := st[s.number]
		if n.PATs == 0 {
			absent = append(absent, strconv.Itoa(int(s.number)))
		}
		lines = append(lines, fmt.Sprintf("  service %d → %s: %s (%d PAT, %d SDT, %s of its own)",
			s.number, redactItem(s.dest), report.Plural(int(n.Packets), "packet"), n.PATs, n.SDTs, report.Plural(int(n.EITs), "EIT section")))
	}
	if len(absent) > 0 {
		missing = failErr("-out-service: service %s not in the stream's PAT: no stream was written for it (probe lists the services)", strings.Join(absent, ", "))
	}
	return lines, missing
}

// servicePaced says whether a service's output is paced: as -out would be.
func servicePaced(c *config, fileInput bool) func(string) bool {
	return func(dest string) bool {
		if c.isSet("pace") {
			return c.pace
		}
		return fileInput && (live.IsAddress(dest) || web.IsURL(dest))
	}
}
