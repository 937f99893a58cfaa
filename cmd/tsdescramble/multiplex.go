package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/multiplex"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// A whole multiplex at once (-keys SERVICE=SOURCE, -config FILE): each service of the input
// gets a key source of its own and an output of its own. The input is split first (package
// split, as -out-service does), and each service with keys is descrambled by a pipeline of its
// own (servicerun.go), fed by its single-program stream: one owner of the key decision per key
// source, so that services under different keys, a BISS feed beside a card server's service,
// never share a crypto-period tracker. A service without keys goes out as it came, or, with
// -missing-key drop, without its scrambled packets.

// keyList is the value of the repeatable -keys flag: each SERVICE=SOURCE as given.
type keyList struct{ items []string }

func (k *keyList) Set(v string) error { k.items = append(k.items, v); return nil }

// String never shows a key: a usage line prints flags' values.
func (k *keyList) String() string {
	if k == nil || len(k.items) == 0 {
		return ""
	}
	return fmt.Sprintf("%d key sources", len(k.items))
}

// multiplexFlags are the flags of a run over a whole multiplex.
func multiplexFlags(c *config) []cli.Flag {
	return []cli.Flag{
		&cli.GenericFlag{Name: "keys", Value: &c.serviceKeys, Category: catKeys, Usage: "the key source of one service, repeatable: `SERVICE=SOURCE`, SOURCE one of cw:HEX, cw:EVEN/ODD, biss:HEX, cw-env:NAME, cw-file:FILE, follow:FILE (a growing CW log), ecm-cache:FILE, key-server-env:NAME, or a key server's cs378x://, newcamd:// or dvbapi:// URL; each service's stream goes to its -out-service output, descrambled with its keys (101=biss:112233445566)"},
		&cli.StringFlag{Name: "config", Destination: &c.configFile, TakesFile: true, Category: catIO, Usage: "read the input, the services, their keys and their outputs from `FILE` (YAML or JSON, see the README's Whole multiplex); -in, -keys, -out-service and -missing-key given beside it win over the file's; SIGHUP rereads it and applies what changed, the other services going on untouched"},
	}
}

// plannedService is one service of a multiplex run: its number (0 until an SDT name is found
// in the stream), its key source as written (empty: none) and its output.
type plannedService struct {
	number uint16
	name   string // the SDT name it was given by, or ""
	keys   string
	sub    *config // the run of its keys: c with its key source (keySourceConfig), or nil
}

// label names the service in messages.
func (s *plannedService) label() string {
	if s.number == 0 {
		return fmt.Sprintf("service %q", s.name)
	}
	return "service " + strconv.Itoa(int(s.number))
}

// checkMultiplex reads -config and -keys into c.serviceOuts, each service with its key source,
// and makes the run a split whose services are descrambled each by itself. A flag given on
// the command line wins over the file: -in over input:, -missing-key over missing-key:, and
// -out-service and -keys over a service's output: and keys:.
func checkMultiplex(c *config, _ Env) error {
	if c.configFile == "" && len(c.serviceKeys.items) == 0 {
		return nil
	}
	var file *multiplex.Config
	if c.configFile != "" {
		var err error
		if file, err = readConfigFile(c.configFile); err != nil {
			return err
		}
		if file.Input != "" && !c.isSet("in") {
			c.in = file.Input
		}
		if file.MissingKey != "" && !c.isSet("missing-key") {
			c.missingKey = file.MissingKey
		}
	}
	switch {
	case c.isSet("out"):
		return usageErr("-out writes the whole stream, and -keys and -config one stream per service: give each service's output with -out-service or in the config")
	case c.anyKeyFlag() || c.keyServerGiven() || c.ecmCache != "" || c.follow || c.ecmXor != "":
		return usageErr("-keys and -config give each service its keys: the key flags for the whole stream (-cw, -biss, -cw-file, -key-server ...) do not go with them")
	case c.outSys != nil, c.passthrough, c.isSet("service"), c.pid != "":
		return usageErr("-keys and -config descramble whole services into outputs of their own: not with -rescramble, -passthrough, -service or -pid")
	}
	if c.missingKey != "pass" && c.missingKey != "drop" {
		return usageErr("-missing-key: want pass (the packets of a service or a period without its key pass as they came) or drop")
	}
	c.cliServiceOuts = slices.Clone(c.serviceOuts)
	outs, err := mergeServices(c, file)
	if err != nil {
		return err
	}
	c.serviceOuts = outs
	c.multiplex = true
	c.mode = pipeline.Passthrough // the input goes to the split as it came; the services' runs descramble
	return nil
}

// readConfigFile reads and checks the config file of -config.
func readConfigFile(path string) (*multiplex.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErr("-config: cannot read %v", runfiles.UnwrapPath(err))
	}
	defer f.Close()
	file, err := multiplex.Read(f)
	if err != nil {
		return nil, usageErr("-config %s: %s", path, strings.TrimPrefix(err.Error(), "multiplex: "))
	}
	return file, nil
}

// mergeServices returns the services of a multiplex run: those of -out-service (as given, in
// c.cliServiceOuts) and of the config file, with -keys given to theirs; each with keys gets
// its key source's config (keySourceConfig). A reload (reload.go) merges the file it reread
// with the same command line.
func mergeServices(c *config, file *multiplex.Config) ([]serviceOut, error) {
	outs := slices.Clone(c.cliServiceOuts)
	find := func(number uint16, name string) int {
		for i, o := range outs {
			if number != 0 && o.number == number || number == 0 && o.name == name {
				return i
			}
		}
		return -1
	}
	if file != nil {
		for _, s := range file.Services {
			if i := find(s.Number, s.Name); i >= 0 {
				if outs[i].plan.keys == "" {
					outs[i].plan.keys = s.Keys // -out-service's output wins, the file's keys stay
				}
				continue
			}
			outs = append(outs, serviceOut{number: s.Number, name: s.Name, dest: s.Output, plan: plannedService{number: s.Number, name: s.Name, keys: s.Keys}})
		}
	}
	keyed := map[uint16]bool{}
	for _, item := range c.serviceKeys.items {
		n, src, ok := strings.Cut(item, "=")
		v, err := strconv.ParseUint(strings.TrimSpace(n), 0, 16)
		if !ok || err != nil || v == 0 || src == "" {
			return nil, usageErr("-keys: want SERVICE=SOURCE (101=biss:112233445566), the service's number from probe; %q is not", redactKeyItem(item))
		}
		if keyed[uint16(v)] {
			return nil, usageErr("-keys: service %d is given keys twice: give one source", v)
		}
		keyed[uint16(v)] = true
		i := find(uint16(v), "")
		if i < 0 {
			return nil, usageErr("-keys: service %d has no output: give it one with -out-service %d=FILE or in the config", v, v)
		}
		outs[i].plan.keys = src
	}
	for i := range outs {
		o := &outs[i]
		o.plan.number, o.plan.name = o.number, o.name
		if o.dest == c.in && c.in != "-" {
			return nil, usageErr("%s: its output %s is the input", o.plan.label(), redactItem(o.dest))
		}
		if o.dest == "-" {
			return nil, usageErr("%s to stdout: only one stream can go there; give it a file or an address", o.plan.label())
		}
		for _, p := range outs[:i] {
			if p.dest == o.dest && o.dest != os.DevNull {
				return nil, usageErr("%s and %s go to the same output %s: one output per service", p.plan.label(), o.plan.label(), redactItem(o.dest))
			}
		}
		if o.plan.keys == "" {
			continue
		}
		sub, err := keySourceConfig(c, o.plan.keys)
		if err != nil {
			return nil, withPrefix(o.plan.label()+": ", err)
		}
		o.plan.sub = sub
	}
	return outs, nil
}

// keySourceConfig returns a copy of c whose key flags give the key source src, as -keys and
// a config's keys: write it, checked as the command line's would be.
func keySourceConfig(c *config, src string) (*config, error) {
	sc := *c
	sc.mode = pipeline.Descramble
	sc.keys = cwFlags{reduce: c.keys.reduce}
	sc.serviceOuts, sc.multiplex = nil, false
	live := false
	kind, val, ok := strings.Cut(src, ":")
	switch {
	case ok && (kind == "cs378x" || kind == "newcamd" || kind == "dvbapi") && strings.HasPrefix(val, "//"):
		sc.keyServer, live = src, true
	case kind == "cw" && strings.Contains(val, "/"):
		sc.keys.even, sc.keys.odd, _ = strings.Cut(val, "/")
	case kind == "cw":
		sc.keys.cw = val
	case kind == "biss":
		sc.keys.biss = val
	case kind == "cw-env":
		sc.keys.env = val
	case kind == "cw-file":
		sc.keys.file = val
	case kind == "follow":
		sc.keys.file, sc.follow, live = val, true, true
	case kind == "ecm-cache":
		sc.ecmCache, live = val, true
	case kind == "key-server-env":
		sc.keyServerEnv, live = val, true
	default:
		return nil, usageErr("keys %q: want cw:HEX, cw:EVEN/ODD, biss:HEX, cw-env:NAME, cw-file:FILE, follow:FILE, ecm-cache:FILE, key-server-env:NAME or a cs378x://, newcamd:// or dvbapi:// URL", redactSource(src))
	}
	if !ok || val == "" {
		return nil, usageErr("keys %q: nothing after %s:", redactSource(src), kind)
	}
	if live {
		if err := checkKeyServer(&sc, Env{}); err != nil {
			return nil, err
		}
	}
	return &sc, nil
}

// redactSource shows a key source without its secret: the kind alone for a key, a URL without
// its password, a file's or a variable's name as it is.
func redactSource(src string) string {
	kind, val, _ := strings.Cut(src, ":")
	switch {
	case strings.HasPrefix(val, "//"):
		// Scheme, host and port only: the user, the password and a newcamd DES key (key=) stay out.
		if u, err := url.Parse(src); err == nil {
			return u.Scheme + "://" + u.Host
		}
		return kind + "://…"
	case kind == "cw" || kind == "biss":
		return kind + ":…"
	case kind == "cw-file" || kind == "follow" || kind == "ecm-cache" || kind == "cw-env" || kind == "key-server-env":
		return src
	}
	return "…" // not a source: it may be a key typed in the wrong place
}

// redactKeyItem shows a -keys item without its secret.
func redactKeyItem(item string) string {
	n, src, ok := strings.Cut(item, "=")
	if !ok {
		return "…"
	}
	return n + "=" + redactSource(src)
}

// withPrefix puts prefix before the message of err, keeping its exit status.
func withPrefix(prefix string, err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return &exitError{code: ee.code, msg: prefix + ee.msg}
	}
	return fmt.Errorf("%s%w", prefix, err)
}
